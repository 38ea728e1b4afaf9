// Threads for work that must not hold up serving, at one of two levels:
// - idle: the filtered views (/news?q=..., a feed of some sites) that a flood of requests can
//   ask for. SCHED_IDLE, the lowest priority a process may give its threads: on a busy machine
//   the kernel runs everything else first, and /news and /healthz stay fast however many
//   filtered requests wait; on an idle one these threads use every core.
// - background: the views every change rebuilds, and the parsing of rendered pages. Niced (+10):
//   they yield to the network threads and to store writes, yet still get their share of a busy
//   machine (a view that never gets built would leave the page behind the headlines for good, a
//   page never parsed the site).
// The threads are marked for yield_point() (yield_point.hpp): a priority decides who gets a core
// when the scheduler chooses, not that it chooses at once, so view builds (filtered or not)
// give the core up between their steps. Parsing a page is one call into Gumbo, with no steps.
// The threads are named (thread_name.hpp), so `top -H` shows which pool uses a core; `name`
// must outlive the pool (a string literal).
//
// Threads: post from any thread; the destructor runs what is queued, then joins.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <optional>
#include <thread>
#include <vector>

namespace newsdesk::server {

class low_priority_pool {
 public:
  enum class level { idle, background };
  low_priority_pool(unsigned threads, level how, const char* name);
  ~low_priority_pool();
  low_priority_pool(const low_priority_pool&) = delete;
  low_priority_pool& operator=(const low_priority_pool&) = delete;

  boost::asio::io_context::executor_type get_executor() { return ioc_.get_executor(); }
  // Runs what is queued (and what that queues), then returns once every thread has ended.
  void join();

 private:
  boost::asio::io_context ioc_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
};

} // namespace newsdesk::server
