// splash-standin: the test suite's Splash stand-in as a program, for trying newsdesk without
// Docker. Serves saved pages for the URLs they were saved from.
//
//   splash-standin [--port N] URL=FILE [URL=FILE...]
//
// Then: SPLASH_URL=http://127.0.0.1:N newsdesk ... renders those URLs from the files.
// SIGUSR1 prints "renders URL COUNT" for each URL on stdout (benchmarks count renders).
#include "tests/support/splash_standin.hpp"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  // Blocked before the stand-in's thread starts, so only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  newsdesk::testing::splash_standin standin;
  if (auto bad = newsdesk::testing::serve_files(standin, argc, argv); !bad.empty()) {
    std::fprintf(stderr, "usage: splash-standin URL=FILE...  (cannot use '%s')\n", bad.c_str());
    return 2;
  }
  std::printf("listening on %s\n", standin.base_url().c_str());
  std::fflush(stdout);
  int received = 0;
  while (sigwait(&signals, &received) == 0 && received == SIGUSR1) {
    for (int i = 1; i < argc; ++i) {
      std::string url(argv[i], std::strchr(argv[i], '='));
      std::printf("renders %s %zu\n", url.c_str(), standin.renders(url));
    }
    std::fflush(stdout);
  }
  return 0;
}
