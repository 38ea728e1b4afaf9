// splash-standin: the test suite's Splash stand-in as a program, for trying newsdesk without
// Docker. Serves saved pages for the URLs they were saved from.
//
//   splash-standin [--port N] URL=FILE [URL=FILE...]
//
// Then: SPLASH_URL=http://127.0.0.1:N newsdesk ... renders those URLs from the files.
#include "tests/support/splash_standin.hpp"

#include <csignal>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  newsdesk::testing::splash_standin standin;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto eq = arg.find('=');
    bool found = false;
    if (eq != std::string::npos) {
      auto html = newsdesk::testing::read_file(arg.substr(eq + 1), &found);
      if (found)
        standin.set(arg.substr(0, eq), newsdesk::testing::standin_page::page(std::move(html)));
    }
    if (!found) {
      std::fprintf(stderr, "usage: splash-standin URL=FILE...  (cannot use '%s')\n", argv[i]);
      return 2;
    }
  }
  std::printf("listening on %s\n", standin.base_url().c_str());
  std::fflush(stdout);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  int received = 0;
  sigwait(&signals, &received);
  return 0;
}
