/* The checks of the C API's C tests (c_api_test.c, verbs_flow_test.c): CHECK counts a failure, with the
 * file, line, errno and drsim_last_error(), and goes on; check_result() reports and gives main's status.
 * One test program includes it once. */
#ifndef DRSIM_CAPI_C_CHECK_H_
#define DRSIM_CAPI_C_CHECK_H_

#include <errno.h>
#include <stdio.h>

#include "capi/drsim.h"

static int failures;

#define CHECK(cond)                                                                                      \
  do {                                                                                                   \
    if (!(cond)) {                                                                                       \
      fprintf(stderr, "%s:%d: CHECK(%s) failed (errno %d, last error: %s)\n", __FILE__, __LINE__, #cond, \
              errno, drsim_last_error());                                                                \
      ++failures;                                                                                        \
    }                                                                                                    \
  } while (0)

/* 1 with the number of failed checks on stderr, or 0 with PASS on stdout. */
static int check_result(void) {
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}

#endif /* DRSIM_CAPI_C_CHECK_H_ */
