#include "server/http/event_loops.hpp"

#include "server/core/thread_name.hpp"

#include <algorithm>

namespace newsdesk::server {

event_loops::event_loops(unsigned count) {
  for (unsigned i = 0; i < std::max(1u, count); ++i) {
    auto l = std::make_unique<loop>();
    l->work.emplace(l->ioc.get_executor());
    l->thread = std::thread([ioc = &l->ioc] {
      name_this_thread("nd-connections");
      ioc->run();
    });
    loops_.push_back(std::move(l));
  }
}

event_loops::~event_loops() {
  stop();
}

boost::asio::any_io_executor event_loops::next() {
  return loops_[next_.fetch_add(1, std::memory_order_relaxed) % loops_.size()]->ioc.get_executor();
}

void event_loops::stop() {
  for (auto& l : loops_) {
    l->work.reset();
    l->ioc.stop();
  }
  for (auto& l : loops_)
    if (l->thread.joinable())
      l->thread.join();
}

} // namespace newsdesk::server
