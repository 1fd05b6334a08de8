// DevX GENEVE TLV option objects (obj_type 0x0b) on drsim contexts: the capability page, create, query
// and destroy, a rule on misc3.geneve_tlv_option_0_data steering OVN-style frames by the configured
// option wherever it sits, and the failures (EREMOTEIO, EOPNOTSUPP, EINVAL, EBUSY).
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "capi/drsim.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "soft_mlx5/devx_test_fixture.h"

namespace drsim {
namespace {

using hw::Field;
using hw::MatchBuilder;
using namespace devx_testing;  // NOLINT: the fixture and mailbox helpers

constexpr uint16_t kObjType = 0x0b;
constexpr int kExceedsLimit = 0x08;

// create_geneve_tlv_option_in: the general object header, then geneve_tlv_option (64 bytes):
// option_class_ignore bit 2 of byte 26, option_class at 28, option_type at 30, option_data_length in the
// low 5 bits of byte 31.
Bytes CreateOptionIn(uint16_t option_class, uint8_t type, uint8_t data_len) {
  Bytes in = In(0xa00, kObjType, 80);
  Put16(in, 28, option_class);
  in[30] = type;
  in[31] = data_len & 0x1f;
  return in;
}

Bytes QueryOptionIn(uint32_t id) {
  Bytes in = In(0xa02, kObjType, 16);
  Put32(in, 8, id);
  return in;
}

// An OVN-style frame: IPv4/UDP/GENEVE with `options`, carrying Ethernet/IPv4/UDP.
Bytes OvnFrame(std::vector<sim::GeneveOption> options) {
  sim::TunnelFrameSpec t;
  t.tunnel.kind = sim::Encap::kGeneve;
  t.tunnel.vni = 5;
  t.tunnel.geneve_options = std::move(options);
  t.inner.protocol = sim::kIpProtoUdp;
  return sim::BuildFrame(t);
}

TEST_F(DevxTest, GeneveTlvOptionCapsAreReported) {
  Bytes pf = Caps(0);
  EXPECT_TRUE(Get64(pf, 0x80) & (uint64_t{1} << 0x0b));  // general_obj_types
  EXPECT_TRUE(Get32(pf, 168) & (1u << 10));              // flex parser: GENEVE option 0
  EXPECT_EQ(pf[172], 1);                                 // max_geneve_tlv_options
  EXPECT_EQ(pf[173] & 0x1f, 7);                          // max_geneve_tlv_option_data_len
  EXPECT_EQ(pf[216] & 0x0f, 0);                          // flex_parser_id_geneve_opt_0
}

TEST_F(DevxTest, GeneveTlvOptionSteersByTheConfiguredOption) {
  Bytes out;
  mlx5dv_devx_obj* option = Create(CreateOptionIn(0x0102, 0x80, 1), &out);
  ASSERT_NE(option, nullptr);
  const uint32_t id = Get32(out, 8);
  Bytes q;
  ASSERT_EQ(Query(option, QueryOptionIn(id), &q, 80), 0) << drsim_last_error();
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(Get32(q, 8), id);
  EXPECT_EQ(Get32(q, 28), 0x01028001u);  // class, type, data length

  ibv_qp* qp = Qp();
  mlx5dv_dr_matcher* m =
      Matcher(Table(1), 1 << 4, *MatchBuilder().Set(Field::kGeneveTlvOption0Data, 0xffffffff).Build());
  Rule(m, *MatchBuilder().Set(Field::kGeneveTlvOption0Data, 0x00010002).Build(),
       {Keep(mlx5dv_dr_action_create_dest_ibv_qp(qp))});
  Rule(all_, MatchParams(), {Keep(mlx5dv_dr_action_create_dest_table(tables_.back()))});
  const sim::GeneveOption key{0x0102, 0x80, {0x00010002}};
  Send(OvnFrame({key}));
  Send(OvnFrame({{0xffff, 0x01, {7, 8}}, {0x0103, 0x80, {9}}, key}));  // third among the options
  Send(OvnFrame({{0x0103, 0x80, {0x00010002}}}));                      // the data in another class: no
  Send(OvnFrame({{0x0102, 0x80, {0x00010003}}}));                      // another key: no
  EXPECT_EQ(Drain(qp), 2);

  // In use while the matcher reads option 0: EBUSY, and the object stays.
  EXPECT_EQ(mlx5dv_devx_obj_destroy(option), EBUSY);
  EXPECT_NE(std::string(drsim_last_error()).find("in use"), std::string::npos) << drsim_last_error();
  ASSERT_EQ(Query(option, QueryOptionIn(id), &q, 80), 0) << drsim_last_error();
}

TEST_F(DevxTest, GeneveTlvOptionFailures) {
  Bytes out;
  // More data than the device parses; a class-ignoring or sample-offset parser; a range of objects.
  CreateFails(CreateOptionIn(0x0102, 0x80, 8), EREMOTEIO, kExceedsLimit);
  EXPECT_NE(std::string(drsim_last_error()).find("option_data_length"), std::string::npos);
  Bytes ignore = CreateOptionIn(0x0102, 0x80, 1);
  ignore[26] = 0x20;
  CreateFails(ignore, EOPNOTSUPP, kBadParam);
  EXPECT_NE(std::string(drsim_last_error()).find("option_class_ignore"), std::string::npos);
  Bytes range = CreateOptionIn(0x0102, 0x80, 1);
  range[12] = 1;
  CreateFails(range, EREMOTEIO, kBadParam);
  Bytes short_in = CreateOptionIn(0x0102, 0x80, 1);
  short_in.resize(24);
  CreateFails(short_in, EINVAL, kBadInputLength);

  // One option per device: a second fails, whatever its class, until the first is destroyed.
  mlx5dv_devx_obj* option = Create(CreateOptionIn(0x0102, 0x80, 1), &out);
  ASSERT_NE(option, nullptr);
  const uint32_t id = Get32(out, 8);
  CreateFails(CreateOptionIn(0xffff, 0x01, 2), EREMOTEIO, kExceedsLimit);
  EXPECT_NE(std::string(drsim_last_error()).find("max_geneve_tlv_options"), std::string::npos);
  // The query names the object; MODIFY is not taken.
  Bytes q;
  EXPECT_EQ(Query(option, QueryOptionIn(id + 1), &q, 80), EINVAL);
  EXPECT_EQ(Query(option, QueryOptionIn(id), &q, 40), EINVAL);  // the output must hold the object
  Bytes mod = In(0xa01, kObjType, 80);
  Put32(mod, 8, id);
  out.assign(16, 0);
  EXPECT_EQ(mlx5dv_devx_obj_modify(option, mod.data(), mod.size(), out.data(), out.size()), EOPNOTSUPP);
  ASSERT_EQ(mlx5dv_devx_obj_destroy(option), 0) << drsim_last_error();
  Forget(option);
  EXPECT_NE(Create(CreateOptionIn(0xffff, 0x01, 2), &out), nullptr);
}

}  // namespace
}  // namespace drsim
