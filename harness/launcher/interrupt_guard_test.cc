#include "harness/launcher/interrupt_guard.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>

#include <atomic>

namespace lockstep {
namespace {

std::atomic<int> g_previous_handler_calls{0};
void PreviousHandler(int) { g_previous_handler_calls.fetch_add(1); }

TEST(InterruptGuardTest, RecordsTheSignalAndRestoresThePreviousHandler) {
  struct sigaction mine {}, before_int {}, before_term {};
  mine.sa_handler = PreviousHandler;
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(::sigaction(SIGINT, &mine, &before_int), 0);
  ASSERT_EQ(::sigaction(SIGTERM, &mine, &before_term), 0);
  {
    InterruptGuard guard;
    EXPECT_EQ(guard.signal(), 0);
    ::raise(SIGTERM);  // would end the test binary without the guard's handler
    EXPECT_EQ(guard.signal(), SIGTERM);
    ASSERT_GE(guard.fd(), 0);
    pollfd pfd{guard.fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&pfd, 1, 1000), 1);
    EXPECT_EQ(g_previous_handler_calls.load(), 0);
  }
  ::raise(SIGINT);
  EXPECT_EQ(g_previous_handler_calls.load(), 1);

  struct sigaction now {};
  ::sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, &PreviousHandler);
  ::sigaction(SIGINT, &before_int, nullptr);
  ::sigaction(SIGTERM, &before_term, nullptr);
}

TEST(InterruptGuardTest, AFreshGuardStartsClear) {
  {
    InterruptGuard first;
    ::raise(SIGINT);
    EXPECT_EQ(first.signal(), SIGINT);
  }
  InterruptGuard second;
  EXPECT_EQ(second.signal(), 0);
  pollfd pfd{second.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 0), 0);  // the old signal's byte was drained
}

TEST(InterruptGuardTest, NestedGuardsShareTheHandlers) {
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  {
    InterruptGuard outer;
    {
      InterruptGuard inner;
    }
    ::raise(SIGINT);  // still ours after the inner guard ended
    EXPECT_EQ(outer.signal(), SIGINT);
  }
  struct sigaction after {};
  ::sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace lockstep
