// The DevX calls of <infiniband/mlx5dv.h>: mlx5dv_devx_general_cmd, mlx5dv_devx_obj_create, _query and
// _modify (mlx5dv_devx_obj_destroy is the C API's, capi/drsim.cc). On a context or object of a software
// NIC they run the command there (devx_commands.h); on anything else they hand the call to rdma-core's own
// libmlx5 (symbol version MLX5_1.7), so a real ConnectX in the same process works as before.
//
// Returns follow rdma-core: mlx5dv_devx_obj_create returns the object, or NULL with errno; the others 0 or
// a positive errno. Failures are recorded (capi::RecordFailure) with a message naming the opcode and the
// field, which drsim_last_error() returns and DRSIM_DEBUG prints.
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/real_symbol.h"
#include "soft_mlx5/devx_commands.h"

namespace drsim::soft_mlx5 {
namespace {

// Makes *m the mailboxes of a call; false after recording EINVAL for a NULL buffer with a length.
bool MailboxOf(const char* fn, const void* in, size_t inlen, void* out, size_t outlen, Mailbox* m) {
  if ((in == nullptr && inlen != 0) || (out == nullptr && outlen != 0)) {
    capi::RecordFailure(
        fn, EINVAL,
        in == nullptr && inlen != 0 ? "in is NULL and inlen is not 0" : "out is NULL and outlen is not 0");
    return false;
  }
  m->in = absl::MakeConstSpan(static_cast<const uint8_t*>(in), in == nullptr ? 0 : inlen);
  m->out = absl::MakeSpan(static_cast<uint8_t*>(out), out == nullptr ? 0 : outlen);
  return true;
}

// Reports `o`: 0 when the command is done; otherwise writes the status and syndrome into the output,
// records the failure for `fn` and returns its errno.
int Finish(const char* fn, const Outcome& o, const Mailbox& m) {
  if (o.ok()) return 0;
  const uint16_t opcode = static_cast<uint16_t>(PrmGet(m.in, prm::kOpcode));
  WriteFailure(o, opcode, m.out);
  const std::string what = m.in.size() >= 2 ? DescribeOpcode(opcode) : std::string("the command");
  return capi::RecordFailure(fn, o.err, absl::StrCat(what, ": ", o.message));
}

// The message for a call on something that is neither the software NIC's nor forwardable.
constexpr char kNoRealLibrary[] =
    "not a software NIC's, and rdma-core's libmlx5 has no such call to hand it to";

}  // namespace
}  // namespace drsim::soft_mlx5

using drsim::capi::RecordFailure;
using drsim::soft_mlx5::Mailbox;

extern "C" {

int mlx5dv_devx_general_cmd(ibv_context* context, const void* in, size_t inlen, void* out, size_t outlen) {
  drsim_function_context* f = drsim::capi::FunctionOf(context);
  if (f == nullptr) {
    if (context == nullptr) return RecordFailure(__func__, EINVAL, "context is NULL");
    auto* real = DRSIM_REAL_FUNCTION(mlx5dv_devx_general_cmd, "MLX5_1.7");
    if (real == nullptr) return RecordFailure(__func__, EOPNOTSUPP, drsim::soft_mlx5::kNoRealLibrary);
    return real(context, in, inlen, out, outlen);
  }
  Mailbox m;
  if (!drsim::soft_mlx5::MailboxOf(__func__, in, inlen, out, outlen, &m)) return EINVAL;
  std::lock_guard<std::recursive_mutex> lock(f->owner->mu);
  return drsim::soft_mlx5::Finish(__func__, drsim::soft_mlx5::RunGeneralCommand(*f, m), m);
}

mlx5dv_devx_obj* mlx5dv_devx_obj_create(ibv_context* context, const void* in, size_t inlen, void* out,
                                        size_t outlen) {
  drsim_function_context* f = drsim::capi::FunctionOf(context);
  if (f == nullptr) {
    if (context == nullptr)
      return drsim::capi::NullWithError<mlx5dv_devx_obj>(__func__, EINVAL, "context is NULL");
    auto* real = DRSIM_REAL_FUNCTION(mlx5dv_devx_obj_create, "MLX5_1.7");
    if (real == nullptr) {
      return drsim::capi::NullWithError<mlx5dv_devx_obj>(__func__, EOPNOTSUPP,
                                                         drsim::soft_mlx5::kNoRealLibrary);
    }
    return real(context, in, inlen, out, outlen);
  }
  Mailbox m;
  if (!drsim::soft_mlx5::MailboxOf(__func__, in, inlen, out, outlen, &m)) return nullptr;
  std::lock_guard<std::recursive_mutex> lock(f->owner->mu);
  mlx5dv_devx_obj* created = nullptr;
  if (drsim::soft_mlx5::Finish(__func__, drsim::soft_mlx5::RunCreateCommand(*f, m, &created), m) != 0) {
    return nullptr;
  }
  return created;
}

int mlx5dv_devx_obj_query(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out, size_t outlen) {
  drsim::capi::Context* ctx = nullptr;
  if (!drsim::capi::IsSoftwareNicObject(obj, drsim::capi::Kind::kDevx, &ctx)) {
    if (obj == nullptr) return RecordFailure(__func__, EINVAL, "obj is NULL");
    auto* real = DRSIM_REAL_FUNCTION(mlx5dv_devx_obj_query, "MLX5_1.7");
    if (real == nullptr) return RecordFailure(__func__, EOPNOTSUPP, drsim::soft_mlx5::kNoRealLibrary);
    return real(obj, in, inlen, out, outlen);
  }
  Mailbox m;
  if (!drsim::soft_mlx5::MailboxOf(__func__, in, inlen, out, outlen, &m)) return EINVAL;
  std::lock_guard<std::recursive_mutex> lock(ctx->mu);
  return drsim::soft_mlx5::Finish(__func__, drsim::soft_mlx5::RunQueryCommand(*obj, m), m);
}

int mlx5dv_devx_obj_modify(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out, size_t outlen) {
  drsim::capi::Context* ctx = nullptr;
  if (!drsim::capi::IsSoftwareNicObject(obj, drsim::capi::Kind::kDevx, &ctx)) {
    if (obj == nullptr) return RecordFailure(__func__, EINVAL, "obj is NULL");
    auto* real = DRSIM_REAL_FUNCTION(mlx5dv_devx_obj_modify, "MLX5_1.7");
    if (real == nullptr) return RecordFailure(__func__, EOPNOTSUPP, drsim::soft_mlx5::kNoRealLibrary);
    return real(obj, in, inlen, out, outlen);
  }
  Mailbox m;
  if (!drsim::soft_mlx5::MailboxOf(__func__, in, inlen, out, outlen, &m)) return EINVAL;
  std::lock_guard<std::recursive_mutex> lock(ctx->mu);
  return drsim::soft_mlx5::Finish(__func__, drsim::soft_mlx5::RunModifyCommand(*obj, m), m);
}

}  // extern "C"
