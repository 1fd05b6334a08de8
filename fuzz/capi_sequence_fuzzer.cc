// libFuzzer target: sequences of C API calls (capi/) on two software NICs, including misuse — objects
// destroyed while in use or in the wrong order, handles of the other NIC, handles of the wrong kind,
// NULL, bad levels, criteria, masks and layouts — with frames sent between the calls. Every call must
// keep rdma-core's conventions (NULL with errno set from creators; 0 or a positive errno from destroys)
// and never crash; at the end, destroying everything in dependency order must succeed and both NICs must
// close, so no reference is lost or leaked. (Destroying an object twice is not in the mix: with rdma-core
// as here, a destroyed pointer is no longer the library's and a second call is the caller's bug.)
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "capi/drsim.h"
#include "fuzz/fuzz_input.h"

namespace {

using drsim::fuzz::FuzzInput;

constexpr int kSlots = 6;

void Check(bool ok) {
  if (!ok) std::abort();
}

// A creator's result: an object, or NULL with errno set.
template <typename T>
T* Created(T* p) {
  Check(p != nullptr || errno != 0);
  return p;
}

// A destroy's result: 0 or a positive errno.
bool Destroyed(int rc) {
  Check(rc >= 0);
  return rc == 0;
}

struct Match {
  size_t match_sz;
  uint8_t buf[448];
};

// The masks and values the sequences use: empty, the outer ethertype, the outer IPv4 destination (with
// ip_version), and a mask with a bit outside any field rdma-core accepts.
void FillMatch(int kind, bool value, Match* m) {
  std::memset(m, 0, sizeof(*m));
  m->match_sz = 448;
  switch (kind) {
    case 1:  // outer ethertype (fte_match_set_lyr_2_4 bytes 6-7)
      m->buf[6] = value ? 0x08 : 0xff;
      m->buf[7] = value ? 0x00 : 0xff;
      break;
    case 2:  // ip_version (byte 18, bits 4..1 of the nibble at bit 0x93) and dst_ipv4 (bytes 60..63)
      m->buf[18] = value ? 0x08 : 0x1e;
      m->buf[63] = value ? 1 : 0xff;
      m->buf[62] = value ? 0 : 0xff;
      break;
    case 3:  // a reserved bit
      m->buf[447] = 0x01;
      break;
    default:
      break;
  }
}

struct Nic {
  ibv_context* ctx = nullptr;
  ibv_qp* qp = nullptr;
};

struct State {
  Nic nics[2];
  mlx5dv_dr_domain* domains[kSlots] = {};
  mlx5dv_dr_table* tables[kSlots] = {};
  mlx5dv_dr_matcher* matchers[kSlots] = {};
  mlx5dv_dr_rule* rules[kSlots] = {};
  mlx5dv_dr_action* actions[kSlots] = {};
};

template <typename T>
int FreeSlot(T* const (&slots)[kSlots]) {
  for (int i = 0; i < kSlots; ++i) {
    if (slots[i] == nullptr) return i;
  }
  return -1;
}

void Step(State& s, FuzzInput& in) {
  errno = 0;
  switch (in.Below(13)) {
    case 0: {  // domain (out-of-range types are c_api_test.c's: C++ cannot pass one without UB)
      const int slot = FreeSlot(s.domains);
      if (slot < 0) return;
      static const mlx5dv_dr_domain_type kTypes[] = {MLX5DV_DR_DOMAIN_TYPE_NIC_RX,
                                                     MLX5DV_DR_DOMAIN_TYPE_NIC_TX, MLX5DV_DR_DOMAIN_TYPE_FDB};
      s.domains[slot] = Created(mlx5dv_dr_domain_create(s.nics[in.Below(2)].ctx, kTypes[in.Below(3)]));
      return;
    }
    case 1: {  // table, maybe on no domain
      const int slot = FreeSlot(s.tables);
      if (slot < 0) return;
      static const uint32_t kLevels[] = {0, 1, 2, 5};
      mlx5dv_dr_domain* d = s.domains[in.Below(kSlots)];
      if (d == nullptr) return;
      s.tables[slot] = Created(mlx5dv_dr_table_create(d, kLevels[in.Below(4)]));
      return;
    }
    case 2: {  // matcher: criteria and mask from the fuzzer
      const int slot = FreeSlot(s.matchers);
      mlx5dv_dr_table* t = s.tables[in.Below(kSlots)];
      if (slot < 0 || t == nullptr) return;
      Match mask;
      FillMatch(in.Below(4), false, &mask);
      const uint16_t priority = in.Below(4);
      const uint8_t criteria = in.Byte() & 0x7;
      s.matchers[slot] = Created(mlx5dv_dr_matcher_create(
          t, priority, criteria, reinterpret_cast<mlx5dv_flow_match_parameters*>(&mask)));
      return;
    }
    case 3: {  // rule with up to three actions, any of them possibly another NIC's
      const int slot = FreeSlot(s.rules);
      mlx5dv_dr_matcher* m = s.matchers[in.Below(kSlots)];
      if (slot < 0 || m == nullptr) return;
      Match value;
      FillMatch(in.Below(4), true, &value);
      mlx5dv_dr_action* list[3];
      size_t n = 0;
      for (int k = in.Below(4); k > 0; --k) {
        if (mlx5dv_dr_action* a = s.actions[in.Below(kSlots)]) list[n++] = a;
      }
      s.rules[slot] =
          Created(mlx5dv_dr_rule_create(m, reinterpret_cast<mlx5dv_flow_match_parameters*>(&value), n, list));
      return;
    }
    case 4: {  // action
      const int slot = FreeSlot(s.actions);
      if (slot < 0) return;
      switch (in.Below(5)) {
        case 0:
          s.actions[slot] = Created(mlx5dv_dr_action_create_drop());
          return;
        case 1:
          s.actions[slot] = Created(mlx5dv_dr_action_create_tag(in.Byte() << 16 | in.Byte()));
          return;
        case 2:
          s.actions[slot] = Created(mlx5dv_dr_action_create_default_miss());
          return;
        case 3:
          s.actions[slot] = Created(mlx5dv_dr_action_create_dest_ibv_qp(s.nics[in.Below(2)].qp));
          return;
        default:
          if (mlx5dv_dr_table* t = s.tables[in.Below(kSlots)]) {
            s.actions[slot] = Created(mlx5dv_dr_action_create_dest_table(t));
          }
          return;
      }
    }
    case 5: {  // destroys, in whatever order the input says; EBUSY keeps the object
      const int slot = in.Below(kSlots);
      if (s.rules[slot] && Destroyed(mlx5dv_dr_rule_destroy(s.rules[slot]))) s.rules[slot] = nullptr;
      return;
    }
    case 6: {
      const int slot = in.Below(kSlots);
      if (s.matchers[slot] && Destroyed(mlx5dv_dr_matcher_destroy(s.matchers[slot])))
        s.matchers[slot] = nullptr;
      return;
    }
    case 7: {
      const int slot = in.Below(kSlots);
      if (s.tables[slot] && Destroyed(mlx5dv_dr_table_destroy(s.tables[slot]))) s.tables[slot] = nullptr;
      return;
    }
    case 8: {
      const int slot = in.Below(kSlots);
      if (s.actions[slot] && Destroyed(mlx5dv_dr_action_destroy(s.actions[slot]))) s.actions[slot] = nullptr;
      return;
    }
    case 9: {
      const int slot = in.Below(kSlots);
      if (s.domains[slot] && Destroyed(mlx5dv_dr_domain_destroy(s.domains[slot]))) s.domains[slot] = nullptr;
      return;
    }
    case 10: {  // a frame from the wire or the PF, then whatever arrived
      uint8_t frame[64] = {};
      std::memset(frame, 0x22, 12);
      frame[12] = 0x08;
      frame[14] = 0x45;
      frame[33] = in.Byte();  // the IPv4 destination's last byte
      Nic& nic = s.nics[in.Below(2)];
      Check(drsim_send(nic.ctx, in.Below(2) ? -1 : 0, frame, sizeof(frame)) >= 0);
      uint8_t buf[256];
      uint32_t tag;
      while (drsim_recv_qp(nic.qp, buf, sizeof(buf), &tag) > 0) {
      }
      while (drsim_recv_port(nic.ctx, 0, buf, sizeof(buf)) > 0) {
      }
      while (drsim_recv_port(nic.ctx, -1, buf, sizeof(buf)) > 0) {
      }
      return;
    }
    case 11: {  // a matcher's layout: flags with an unknown bit too, a hint too large, a root table's matcher
      mlx5dv_dr_matcher* m = s.matchers[in.Below(kSlots)];
      if (m == nullptr) return;
      // (2^17 rules: a match table large enough to queue inserts, whose rules then wait for their slots
      // while frames and destroys go on. 25 is past the device's most.)
      static const uint32_t kHints[] = {0, 5, 17, 25};
      mlx5dv_dr_matcher_layout layout = {};
      layout.flags = in.Below(8);  // RESIZABLE, NUM_RULE and an unknown bit
      layout.log_num_of_rules_hint = kHints[in.Below(4)];
      Check(mlx5dv_dr_matcher_set_layout(m, in.Below(8) == 0 ? nullptr : &layout) >= 0);
      return;
    }
    default: {  // a live handle passed as another kind, or NULL: EINVAL, nothing destroyed
      const int slot = in.Below(kSlots);
      switch (in.Below(3)) {
        case 0:
          if (s.tables[slot]) {
            Check(mlx5dv_dr_matcher_destroy(reinterpret_cast<mlx5dv_dr_matcher*>(s.tables[slot])) == EINVAL);
          }
          return;
        case 1:
          if (s.matchers[slot]) {
            Check(mlx5dv_dr_rule_destroy(reinterpret_cast<mlx5dv_dr_rule*>(s.matchers[slot])) == EINVAL);
          }
          return;
        default:
          Check(mlx5dv_dr_rule_destroy(nullptr) == EINVAL);
          Check(mlx5dv_dr_table_create(nullptr, 1) == nullptr && errno == EINVAL);
          return;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  State s;
  for (Nic& nic : s.nics) {
    nic.ctx = drsim_open(1);
    Check(nic.ctx != nullptr);
    nic.qp = drsim_create_qp(nic.ctx, 0);
    Check(nic.qp != nullptr);
  }
  for (int steps = 0; !in.done() && steps < 200; ++steps) Step(s, in);
  // Everything goes, in dependency order, and both NICs close: no reference was lost or leaked.
  for (mlx5dv_dr_rule*& r : s.rules) Check(r == nullptr || mlx5dv_dr_rule_destroy(r) == 0);
  for (mlx5dv_dr_matcher*& m : s.matchers) Check(m == nullptr || mlx5dv_dr_matcher_destroy(m) == 0);
  for (mlx5dv_dr_action*& a : s.actions) Check(a == nullptr || mlx5dv_dr_action_destroy(a) == 0);
  for (mlx5dv_dr_table*& t : s.tables) Check(t == nullptr || mlx5dv_dr_table_destroy(t) == 0);
  for (mlx5dv_dr_domain*& d : s.domains) Check(d == nullptr || mlx5dv_dr_domain_destroy(d) == 0);
  for (Nic& nic : s.nics) {
    Check(drsim_destroy_qp(nic.qp) == 0);
    Check(drsim_close(nic.ctx) == 0);
  }
  return 0;
}
