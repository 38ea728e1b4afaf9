#include "server/app/low_priority_pool.hpp"

#include "server/core/log.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace newsdesk::server {

low_priority_pool::low_priority_pool(unsigned threads)
    : work_(boost::asio::make_work_guard(ioc_)) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    threads_.emplace_back([this, first = i == 0] {
      // On Linux a nice value belongs to the thread that sets it, not to the process.
      if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19) != 0 && first)
        log_warn(std::string("msg=\"filtered views run at normal priority\" error=\"") +
                 std::strerror(errno) + "\"");
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
