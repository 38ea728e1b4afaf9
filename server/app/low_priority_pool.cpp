#include "server/app/low_priority_pool.hpp"

#include "server/core/log.hpp"
#include "server/core/thread_name.hpp"
#include "server/core/yield_point.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace newsdesk::server {

low_priority_pool::low_priority_pool(unsigned threads, level how, const char* name)
    : work_(boost::asio::make_work_guard(ioc_)) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    threads_.emplace_back([this, how, name, first = i == 0] {
      name_this_thread(name);
      mark_background_thread();
      int error = 0;
      if (how == level::idle) {
        // SCHED_IDLE: the thread runs when a core has nothing else to run, and a waking network
        // thread takes the core back at once (a nice value alone leaves it a time slice).
        const sched_param param{};
        error = ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &param);
      } else if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10) != 0) {
        error = errno; // on Linux a nice value belongs to the thread
      }
      if (error && first)
        log_warn(std::string("msg=\"low-priority threads run at normal priority\" level=") +
                 (how == level::idle ? "idle" : "background") +
                 " error=" + logfmt_quoted(std::strerror(error)));
      ioc_.run();
    });
}

low_priority_pool::~low_priority_pool() {
  join();
}

void low_priority_pool::join() {
  work_.reset();
  for (auto& t : threads_)
    if (t.joinable())
      t.join();
}

} // namespace newsdesk::server
