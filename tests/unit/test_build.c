/* The build itself. Test builds (KVSIM_SANITIZE or KVSIM_ASSERTS) compile
 * assert() in: CMake's optimised build types pass -DNDEBUG, which left every
 * assert of the library dead in both CI builds. The library, the CLI and
 * these tests share the directory's flags, so what holds here holds there. */
#include <assert.h>
#include <criterion/criterion.h>
#include <signal.h>

#ifdef KVSIM_EXPECT_ASSERTS

Test(build, ndebug_not_defined) {
#ifdef NDEBUG
  cr_assert_fail(
      "NDEBUG is defined in a build configured to run asserts (KVSIM_SANITIZE/KVSIM_ASSERTS)");
#else
  cr_assert(1, "NDEBUG is not defined");
#endif
}

/* A false assert aborts: it would simply return if asserts were compiled out. */
Test(build, false_assert_aborts, .signal = SIGABRT) {
  volatile int one = 1;
  assert(one == 0 && "this assert must fire");
}

#endif
