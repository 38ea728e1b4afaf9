#include "server/core/log.hpp"

#include "server/core/thread_name.hpp"
#include "server/core/utc_time.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace newsdesk::server {
namespace {
std::atomic<log_level> min_level{log_level::info};
std::atomic<bool> use_stderr{false};

// The tests' sink (set_log_sink). The flag spares every line the mutex while none is set.
std::atomic<bool> sink_set{false};
std::mutex sink_mutex;
std::function<void(std::string_view)> sink; // guarded by sink_mutex

// Hands `line` to the sink when one is set.
bool to_sink(std::string_view line) {
  if (!sink_set.load(std::memory_order_acquire))
    return false;
  std::lock_guard lock(sink_mutex);
  if (!sink)
    return false;
  sink(line);
  return true;
}

// Lines go to a writer thread: a caller (a network thread logging a request) only appends to a
// buffer and never waits on the terminal, a pipe or a file. The buffer is bounded: when the
// output cannot keep up, lines are dropped and the writer says how many.
class line_writer {
 public:
  static constexpr std::size_t max_pending_bytes = 8 * 1024 * 1024;
  // Each thread's access lines waiting for the writer.
  static constexpr std::size_t max_thread_bytes = 1024 * 1024;
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
    // Access lines added after the writer's last collection.
    std::string rest;
    std::lock_guard lock(mutex_);
    collect_buffers_locked(rest);
    write(rest);
  }

  void push(const std::string& line) {
    std::unique_lock lock(mutex_);
    if (stopping_) { // after the writer stopped (exit): write directly
      lock.unlock();
      write(line);
      return;
    }
    start_locked();
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

  // Calls `append` with the calling thread's access-line buffer, locked; the buffer is registered
  // with the writer on first use. Lines over the buffer's bound are counted as dropped.
  template <class Append> void push_access(std::size_t size, Append append) {
    thread_local std::shared_ptr<thread_buffer> mine;
    if (!mine) {
      mine = std::make_shared<thread_buffer>();
      {
        std::lock_guard lock(mutex_);
        start_locked();
        buffers_.push_back(mine);
      }
      wake_.notify_one(); // the writer now visits the buffers on a timer
    }
    std::lock_guard lock(mine->mutex);
    if (mine->text.size() + size > max_thread_bytes)
      ++mine->dropped;
    else
      append(mine->text);
  }

 private:
  struct thread_buffer {
    std::mutex mutex; // taken by its own thread per line, and by the writer per collection
    std::string text;
    std::size_t dropped = 0;
  };

  void start_locked() {
    if (!thread_.joinable() && !stopping_)
      thread_ = std::thread([this] {
        name_this_thread("nd-log");
        run();
      });
  }

  // Moves every thread's access lines to `batch`; returns how many lines were dropped.
  std::size_t collect_buffers_locked(std::string& batch) {
    std::size_t dropped = 0;
    for (const auto& b : buffers_) {
      std::lock_guard lock(b->mutex);
      batch += b->text;
      b->text.clear();
      dropped += std::exchange(b->dropped, 0);
    }
    return dropped;
  }

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      auto ready = [this] { return !pending_.empty() || dropped_ || stopping_; };
      // With access buffers the writer also looks at them every log_access_delay_ms; without,
      // it sleeps until a line or the first buffer comes.
      if (buffers_.empty())
        wake_.wait(lock, [&] { return ready() || !buffers_.empty(); });
      else
        wake_.wait_for(lock, std::chrono::milliseconds(log_access_delay_ms), ready);
      std::string batch;
      batch.swap(pending_);
      const auto dropped = std::exchange(dropped_, 0) + collect_buffers_locked(batch);
      const bool stop = stopping_;
      lock.unlock();
      if (!batch.empty())
        write(batch);
      if (dropped)
        write("level=warn msg=\"log lines dropped: the output could not keep up\" count=" +
              std::to_string(dropped) + "\n");
      if (stop)
        return;
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
  std::vector<std::shared_ptr<thread_buffer>> buffers_;
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

namespace {
// Appends "2026-11-22T08:55:06.123Z level=info MESSAGE\n" to `out`.
void append_line(std::string& out, log_level level, std::string_view message) {
  using namespace std::chrono;
  // A few integer operations, no libc call and no lock (utc_time.hpp): cheap enough per line.
  append_utc(out, duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count(),
             rfc3339_millis);
  out += " level=";
  out += level_name(level);
  out += ' ';
  out += message;
  out += '\n';
}
constexpr std::size_t line_overhead = 48; // what append_line adds to the message
} // namespace

void log(log_level level, std::string_view message) {
  if (level < min_level.load(std::memory_order_relaxed))
    return;
  std::string line;
  line.reserve(message.size() + line_overhead);
  append_line(line, level, message);
  if (!to_sink(line))
    writer().push(line);
}

void log_access(std::string_view message) {
  if (log_level::info < min_level.load(std::memory_order_relaxed))
    return;
  if (sink_set.load(std::memory_order_acquire)) {
    std::string line;
    append_line(line, log_level::info, message);
    if (to_sink(line))
      return;
  }
  writer().push_access(message.size() + line_overhead, [message](std::string& buffer) {
    append_line(buffer, log_level::info, message);
  });
}

void set_log_sink(std::function<void(std::string_view line)> new_sink) {
  std::lock_guard lock(sink_mutex);
  sink = std::move(new_sink);
  sink_set.store(static_cast<bool>(sink), std::memory_order_release);
}

std::string logfmt_quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  append_escaped(out, text);
  out += '"';
  return out;
}

void append_escaped(std::string& out, std::string_view text, escape_style style) {
  static constexpr char hex[] = "0123456789abcdef";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if ((byte >= 0x20 && byte != 0x7f) || style == escape_style::prometheus) {
      out += c;
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      const char escaped[] = {'\\', 'u', '0', '0', hex[byte >> 4], hex[byte & 0xf]};
      out.append(escaped, sizeof escaped);
    }
  }
}

void line_writer::write(const std::string& text) {
  auto* out = use_stderr ? stderr : stdout;
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

} // namespace newsdesk::server
