#include "server/core/log.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace newsdesk::server {
namespace {
std::atomic<log_level> min_level{log_level::info};
std::atomic<bool> use_stderr{false};

// Lines go to a writer thread: a caller (a network thread logging a request) only appends to a
// buffer and never waits on the terminal, a pipe or a file. The buffer is bounded: when the
// output cannot keep up, lines are dropped and the writer says how many.
class line_writer {
 public:
  static constexpr std::size_t max_pending_bytes = 8 * 1024 * 1024;
  static constexpr std::size_t busy_batch_bytes = 4096;
  static constexpr std::chrono::milliseconds busy_pause{5};

  // Writes what is pending and stops the thread; later lines are written directly.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable())
      thread_.join();
  }

  void push(const std::string& line) {
    std::unique_lock lock(mutex_);
    if (stopping_) { // after the writer stopped (exit): write directly
      lock.unlock();
      write(line);
      return;
    }
    if (!thread_.joinable())
      thread_ = std::thread([this] { run(); });
    if (pending_.size() + line.size() > max_pending_bytes) {
      ++dropped_;
      return;
    }
    const bool was_empty = pending_.empty();
    pending_ += line;
    // Only the first line of a batch wakes the writer: a busy server pays one append per line,
    // not a system call.
    if (was_empty)
      wake_.notify_one();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return !pending_.empty() || dropped_ || stopping_; });
      if (pending_.empty() && !dropped_ && stopping_)
        return;
      std::string batch;
      batch.swap(pending_);
      const auto dropped = dropped_;
      dropped_ = 0;
      lock.unlock();
      write(batch);
      if (dropped)
        write("level=warn msg=\"log lines dropped: the output could not keep up\" count=" +
              std::to_string(dropped) + "\n");
      // Under load (a batch of many lines) let the next one gather for a moment: fewer wake-ups
      // and writes per line. A quiet server's lines still go out at once.
      if (batch.size() >= busy_batch_bytes)
        std::this_thread::sleep_for(busy_pause);
      lock.lock();
    }
  }

  static void write(const std::string& text);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::string pending_;
  std::size_t dropped_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

// Never destroyed: something may log during static destruction (then it writes directly).
// The stopper, constructed after it, stops it at exit, writing what is pending.
line_writer& writer() {
  static auto* w = new line_writer();
  static struct stopper {
    ~stopper() { w->stop(); }
  } stop_at_exit;
  return *w;
}

const char* level_name(log_level l) {
  switch (l) {
  case log_level::debug:
    return "debug";
  case log_level::info:
    return "info";
  case log_level::warn:
    return "warn";
  case log_level::error:
    return "error";
  }
  return "info";
}
} // namespace

void set_log_level(log_level level) {
  min_level = level;
}

void log_to_stderr(bool on) {
  use_stderr = on;
}

std::string_view to_string(log_level level) {
  return level_name(level);
}

log_level parse_log_level(std::string_view name) {
  for (auto l : {log_level::debug, log_level::info, log_level::warn, log_level::error})
    if (name == level_name(l))
      return l;
  throw std::invalid_argument("unknown log level '" + std::string(name) +
                              "' (expected debug, info, warn or error)");
}

void log(log_level level, std::string_view message) {
  if (level < min_level.load(std::memory_order_relaxed))
    return;
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  // The date and time to the second change once a second: formatted once per thread per second.
  thread_local std::time_t stamp_secs = -1;
  thread_local char stamp[32];
  if (secs != stamp_secs) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    stamp_secs = secs;
  }
  std::string line;
  line.reserve(message.size() + 64);
  line += stamp;
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ", static_cast<int>(millis));
  line += ms;
  line += " level=";
  line += level_name(level);
  line += ' ';
  line += message;
  line += '\n';
  writer().push(line);
}

void line_writer::write(const std::string& text) {
  auto* out = use_stderr ? stderr : stdout;
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

} // namespace newsdesk::server
