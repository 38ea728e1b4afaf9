#include "server/news/news_clock.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace newsdesk::server {

using std::chrono::milliseconds;

namespace {

class asio_timer final : public news_clock::timer {
 public:
  explicit asio_timer(boost::asio::io_context& ioc)
      : timer_(ioc) {}
  void wait(milliseconds delay, std::function<void()> fn) override {
    timer_.expires_after(delay); // cancels the pending wait, whose handler then sees an error
    timer_.async_wait([fn = std::move(fn)](boost::system::error_code ec) {
      if (!ec)
        fn();
    });
  }
  void cancel() override { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
};

} // namespace

std::chrono::system_clock::time_point asio_clock::system_now() const {
  return std::chrono::system_clock::now();
}

std::chrono::steady_clock::time_point asio_clock::steady_now() const {
  return std::chrono::steady_clock::now();
}

std::unique_ptr<news_clock::timer> asio_clock::make_timer() {
  return std::make_unique<asio_timer>(ioc_);
}

class manual_clock::manual_timer final : public news_clock::timer {
 public:
  manual_timer(manual_clock& clock, std::uint64_t id)
      : clock_(clock)
      , id_(id) {}
  ~manual_timer() override { clock_.drop(id_); }
  void wait(milliseconds delay, std::function<void()> fn) override {
    clock_.set(id_, delay, std::move(fn));
  }
  void cancel() override { clock_.drop(id_); }

 private:
  manual_clock& clock_;
  std::uint64_t id_;
};

manual_clock::manual_clock(std::chrono::system_clock::time_point start)
    : system_start_(start) {}

manual_clock::~manual_clock() = default;

std::chrono::system_clock::time_point manual_clock::system_now() const {
  std::lock_guard lock(mutex_);
  return system_start_ + now_;
}

std::chrono::steady_clock::time_point manual_clock::steady_now() const {
  std::lock_guard lock(mutex_);
  return std::chrono::steady_clock::time_point(now_);
}

std::chrono::milliseconds manual_clock::elapsed() const {
  std::lock_guard lock(mutex_);
  return now_;
}

std::unique_ptr<news_clock::timer> manual_clock::make_timer() {
  std::lock_guard lock(mutex_);
  return std::make_unique<manual_timer>(*this, next_timer_id_++);
}

void manual_clock::set(std::uint64_t timer_id, milliseconds delay, std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  std::erase_if(waits_, [&](const auto& w) { return w.second.timer_id == timer_id; });
  waits_.emplace(std::pair{now_ + std::max(delay, milliseconds{0}), next_seq_++},
                 entry{timer_id, std::move(fn)});
}

void manual_clock::drop(std::uint64_t timer_id) {
  std::lock_guard lock(mutex_);
  std::erase_if(waits_, [&](const auto& w) { return w.second.timer_id == timer_id; });
}

void manual_clock::advance(milliseconds by) {
  std::unique_lock lock(mutex_);
  const auto until = now_ + by;
  while (!waits_.empty() && waits_.begin()->first.first <= until) {
    auto node = waits_.extract(waits_.begin());
    now_ = node.key().first;
    lock.unlock(); // the callback may set or cancel timers, or read the time
    node.mapped().fn();
    lock.lock();
  }
  now_ = until;
}

std::vector<milliseconds> manual_clock::pending() const {
  std::lock_guard lock(mutex_);
  std::vector<milliseconds> out;
  for (const auto& [key, w] : waits_)
    out.push_back(key.first - now_);
  return out;
}

} // namespace newsdesk::server
