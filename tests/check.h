/* Minimal test assertions: every failure prints file:line and the values,
 * and the test exits non-zero at the end. */
#ifndef NPL_TEST_CHECK_H
#define NPL_TEST_CHECK_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int npl_test_failures = 0;
static int npl_test_checks = 0;

#define CHECK(cond) do { npl_test_checks++; if (!(cond)) { npl_test_failures++; \
  fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); npl_test_checks++; \
  if (_a != _b) { npl_test_failures++; fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", \
  __FILE__, __LINE__, #a, #b, _a, _b); } } while (0)
#define CHECK_NEAR(a, b, tol) do { double _a = (double)(a), _b = (double)(b); npl_test_checks++; \
  if (!(fabs(_a - _b) <= (tol))) { npl_test_failures++; fprintf(stderr, "%s:%d: |%s - %s| <= %g failed: %.9g vs %.9g\n", \
  __FILE__, __LINE__, #a, #b, (double)(tol), _a, _b); } } while (0)
#define TEST_MAIN_END() do { printf("%d checks, %d failed\n", npl_test_checks, npl_test_failures); \
  return npl_test_failures ? 1 : 0; } while (0)

#endif
