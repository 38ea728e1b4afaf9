// Load generator for the newsdesk broker and for redis-server's pub/sub, on 127.0.0.1 only.
//
//   broker_loadgen --proto newsdesk|redis|mqtt --port P --mode topic|queue|idle|stuck
//                  [--subs N] [--messages M] [--payload BYTES] [--rate MSG_PER_S]
//                  [--conns N] [--server-pid PID] [--window W] [--count C]
//
// topic: 1 publisher, N subscribers of one channel (/topic/bench; Redis: SUBSCRIBE/PUBLISH;
//        MQTT: topic "bench", QoS 0, MQTT 3.1.1, the same client for newsdesk and Mosquitto).
// queue: 1 publisher, N consumers of one queue (/queue/bench; Redis: the publisher pipelines
//        RPUSH, one message per command, and each consumer keeps W pipelined
//        "BLMPOP 0 1 key LEFT COUNT C" outstanding, so a consumer takes up to C messages per
//        round trip instead of one).
// idle:  N idle subscriber connections; a probe message is published until every one of them
//        has received it (so all subscriptions are registered), then the server's RSS growth
//        per connection is printed (and, for Redis, PUBSUB NUMSUB as a cross-check).
// stuck: one subscriber that never reads while M messages are published; prints server RSS.
//
// Each payload carries a sequence number and a send timestamp (CLOCK_MONOTONIC ns, shared by
// processes on one machine). Throughput is deliveries *received* per second; latency is
// receive time minus send time. Before measuring, probe messages are sent until every
// subscriber has seen one, so the run starts with all subscriptions in place.
//
// Both protocols get the same client costs: one 256 KiB read per readiness, frames or RESP
// replies parsed in place (no copy, no allocation per message), publishes built from a
// precomputed per-message header and written 512 at a time. With --server-pid, flow runs
// also print the CPU share the server and this client used during the measured interval,
// which tells which side limits throughput.
// Prints one line beginning with RESULT, as key=value pairs.

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/asio.hpp>

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

namespace {

constexpr std::uint64_t probe_seq = ~std::uint64_t{0};

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

struct options {
  std::string proto = "newsdesk";
  std::uint16_t port = 0;
  std::string mode = "topic";
  int subs = 10;
  std::uint64_t messages = 100000;
  std::size_t payload = 100;
  std::uint64_t rate = 0; // 0: as fast as possible
  int conns = 10000;
  int server_pid = 0;
  int window = 2;
  int count = 1000;
};

// Seconds a thread has run on a CPU and seconds it has spent runnable but waiting for one
// (/proc/PID/schedstat, nanosecond resolution; PID "self" is this single-threaded client).
// Both servers do their work on their main thread. The waiting time is what other jobs on
// this shared machine took from it. {-1, -1} if unreadable.
std::pair<double, double> sched_s(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/schedstat");
  unsigned long long on_cpu = 0, waiting = 0;
  if (!(in >> on_cpu >> waiting))
    return {-1, -1};
  return {static_cast<double>(on_cpu) / 1e9, static_cast<double>(waiting) / 1e9};
}

long rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return -1;
}

void put_u64(char* p, std::uint64_t v) {
  std::memcpy(p, &v, 8);
}
std::uint64_t get_u64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
std::uint32_t get_be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) |
         std::uint32_t{u[3]};
}
void append_be32(std::string& out, std::uint32_t n) {
  const char h[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                     static_cast<char>(n >> 8), static_cast<char>(n)};
  out.append(h, 4);
}
void append_frame(std::string& out, std::string_view s) {
  append_be32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}
void append_bulk(std::string& out, std::string_view s) {
  out += '$';
  out += std::to_string(s.size());
  out += "\r\n";
  out.append(s);
  out += "\r\n";
}
std::string resp_command(std::initializer_list<std::string_view> parts) {
  std::string out = "*" + std::to_string(parts.size()) + "\r\n";
  for (auto p : parts)
    append_bulk(out, p);
  return out;
}

// Parses one RESP value at [p, end) that is an array (of bulk strings / integers) or a single
// integer. Returns bytes consumed, 0 if incomplete. `last` is the array's last bulk string.
std::size_t parse_resp(const char* p, const char* end, std::string_view& first,
                       std::string_view& last) {
  const char* start = p;
  auto line = [&](const char*& q) -> const char* { // returns pointer to '\r' or nullptr
    const void* r = std::memchr(q, '\r', static_cast<std::size_t>(end - q));
    if (!r || static_cast<const char*>(r) + 1 >= end)
      return nullptr;
    return static_cast<const char*>(r);
  };
  if (p >= end)
    return 0;
  if (*p == ':' || *p == '+' || *p == '-') {
    const char* cr = line(p);
    if (!cr)
      return 0;
    first = last = {};
    return static_cast<std::size_t>(cr + 2 - start);
  }
  if (*p != '*')
    throw std::runtime_error("unexpected RESP byte");
  const char* cr = line(p);
  if (!cr)
    return 0;
  const long n = std::strtol(p + 1, nullptr, 10);
  p = cr + 2;
  first = last = {};
  for (long i = 0; i < n; ++i) {
    if (p >= end)
      return 0;
    const char type = *p;
    cr = line(p);
    if (!cr)
      return 0;
    if (type == ':') {
      p = cr + 2;
      continue;
    }
    const long len = std::strtol(p + 1, nullptr, 10);
    p = cr + 2;
    if (len < 0)
      continue;
    if (end - p < len + 2)
      return 0;
    std::string_view v(p, static_cast<std::size_t>(len));
    if (i == 0)
      first = v;
    last = v;
    p += len + 2;
  }
  return static_cast<std::size_t>(p - start);
}

// Reads a RESP line "<type><integer>\r\n" at c and advances past it; false if incomplete.
bool read_int_line(const char*& c, const char* end, char type, long& v) {
  if (c >= end)
    return false;
  const void* cr = std::memchr(c, '\r', static_cast<std::size_t>(end - c));
  if (!cr || static_cast<const char*>(cr) + 1 >= end)
    return false;
  const char* e = static_cast<const char*>(cr);
  if (*c != type)
    throw std::runtime_error("unexpected RESP reply: " + std::string(c, e));
  if (std::from_chars(c + 1, e, v).ec != std::errc())
    throw std::runtime_error("bad RESP integer: " + std::string(c, e));
  c = e + 2;
  return true;
}

// Parses one "BLMPOP ... COUNT" reply, *2 [key, *N [bulk...]], putting views of the N values
// (into the read buffer) in `items`. Returns bytes consumed, 0 if incomplete.
std::size_t parse_blmpop(const char* p, const char* end, std::vector<std::string_view>& items) {
  const char* c = p;
  long n = 0;
  if (!read_int_line(c, end, '*', n))
    return 0;
  if (n != 2)
    throw std::runtime_error("BLMPOP reply is not [key, values]");
  long len = 0;
  if (!read_int_line(c, end, '$', len))
    return 0;
  if (end - c < len + 2)
    return 0;
  c += len + 2;
  if (!read_int_line(c, end, '*', n))
    return 0;
  items.clear();
  for (long i = 0; i < n; ++i) {
    if (!read_int_line(c, end, '$', len))
      return 0;
    if (end - c < len + 2)
      return 0;
    items.emplace_back(c, static_cast<std::size_t>(len));
    c += len + 2;
  }
  return static_cast<std::size_t>(c - p);
}

// MQTT 3.1.1 packets the load generator sends (QoS 0 only).
void append_varint(std::string& out, std::uint32_t n) {
  do {
    auto b = static_cast<unsigned char>(n & 0x7f);
    n >>= 7;
    if (n > 0)
      b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (n > 0);
}
void append_mqtt_string(std::string& out, std::string_view s) {
  out.push_back(static_cast<char>(s.size() >> 8));
  out.push_back(static_cast<char>(s.size() & 0xff));
  out.append(s);
}
std::string mqtt_connect(const std::string& client_id) {
  std::string body;
  append_mqtt_string(body, "MQTT");
  body += '\x04'; // 3.1.1
  body += '\x02'; // clean session
  body += '\x00'; // keep-alive 0: none (bench connections are not idle long enough to matter)
  body += '\x00';
  append_mqtt_string(body, client_id);
  std::string out(1, '\x10');
  append_varint(out, static_cast<std::uint32_t>(body.size()));
  return out + body;
}
std::string mqtt_subscribe(std::string_view topic) {
  std::string body("\x00\x01", 2);
  append_mqtt_string(body, topic);
  body += '\x00';
  std::string out(1, '\x82');
  append_varint(out, static_cast<std::uint32_t>(body.size()));
  return out + body;
}
// Everything of a QoS 0 PUBLISH before its payload.
std::string mqtt_publish_head(std::string_view topic, std::size_t payload) {
  std::string out(1, '\x30');
  append_varint(out, static_cast<std::uint32_t>(2 + topic.size() + payload));
  append_mqtt_string(out, topic);
  return out;
}
// A unique client id per connection: Mosquitto closes an older connection with the same id.
std::string next_client_id(const char* role) {
  static std::uint64_t n = 0;
  return std::string(role) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

std::string blmpop_command(std::string_view key, int count) {
  return resp_command({"BLMPOP", "0", "1", key, "LEFT", "COUNT", std::to_string(count)});
}

struct shared_state {
  options opt;
  net::io_context* ioc = nullptr;
  tcp::endpoint ep;
  bool redis = false;
  bool mqtt = false;
  bool queue = false;
  std::string channel;
  // What precedes the payload of every Redis pub/sub message on `channel`; matched with one
  // memcmp so the common case needs no general RESP parsing.
  std::string push_prefix;
  std::string pop_command; // one BLMPOP, reissued per reply
  int ready = 0;
  bool started = false;
  bool publishing_done = false;
  std::uint64_t t_start = 0;
  std::uint64_t t_last = 0;
  std::uint64_t received = 0;
  std::uint64_t dups = 0;
  std::uint64_t reorders = 0;
  int subs_done = 0;
  std::vector<std::uint8_t> seen_queue;
  std::vector<std::uint32_t> lat_us;
  bool finished = false;
  double server_cpu0 = 0;
  double client_cpu0 = 0;
  double server_wait0 = 0;
  double client_wait0 = 0;
};

class subscriber : public std::enable_shared_from_this<subscriber> {
 public:
  subscriber(shared_state& st, int rcvbuf = 0, std::size_t read_bytes = 256 * 1024)
      : st_(st)
      , sock_(*st.ioc)
      , rcvbuf_(rcvbuf)
      , read_bytes_(read_bytes) {
    if (!st_.queue && st_.opt.mode == "topic")
      seen_.assign(st_.opt.messages, 0);
  }

  void start(bool read = true) {
    sock_.open(tcp::v4());
    if (rcvbuf_ > 0)
      sock_.set_option(net::socket_base::receive_buffer_size(rcvbuf_));
    sock_.async_connect(st_.ep, [self = shared_from_this(), read](const error_code& ec) {
      if (ec)
        throw std::runtime_error("connect: " + ec.message());
      self->sock_.set_option(tcp::no_delay(true));
      std::string hello;
      if (self->st_.mqtt) {
        hello = mqtt_connect(next_client_id("sub")) + mqtt_subscribe(self->st_.channel);
      } else if (!self->st_.redis) {
        append_frame(hello, self->st_.channel);
      } else if (!self->st_.queue) {
        hello = resp_command({"SUBSCRIBE", self->st_.channel});
      } else {
        for (int i = 0; i < self->st_.opt.window; ++i)
          hello += blmpop_command(self->st_.channel, self->st_.opt.count);
      }
      net::write(self->sock_, net::buffer(hello));
      self->connected = true;
      if (read)
        self->do_read();
    });
  }

  bool connected = false;
  int native_fd() { return sock_.native_handle(); }

 private:
  void do_read() {
    if (buf_.empty())
      buf_.resize(read_bytes_);
    sock_.async_read_some(net::buffer(buf_.data() + have_, buf_.size() - have_),
                          [self = shared_from_this()](const error_code& ec, std::size_t n) {
                            if (ec)
                              return;
                            self->on_read(n);
                          });
  }

  void on_read(std::size_t n) {
    have_ += n;
    const char* p = buf_.data();
    const char* end = p + have_;
    std::size_t replies = 0;
    if (st_.mqtt) {
      p = parse_mqtt(p, end);
    } else if (!st_.redis) {
      while (end - p >= 4) {
        const std::uint32_t len = get_be32(p);
        if (static_cast<std::size_t>(end - p) < 4 + len)
          break;
        on_payload(p + 4, len);
        p += 4 + len;
      }
    } else if (st_.queue) {
      while (const std::size_t used = parse_blmpop(p, end, items_)) {
        for (const auto v : items_)
          on_payload(v.data(), v.size());
        p += used;
        ++replies;
      }
    } else {
      while (p < end) {
        const std::size_t used = parse_push(p, end);
        if (used == 0)
          break;
        p += used;
      }
    }
    const std::size_t rest = static_cast<std::size_t>(end - p);
    std::memmove(buf_.data(), p, rest);
    have_ = rest;
    if (rest == buf_.size())
      buf_.resize(buf_.size() * 2);
    if (replies > 0 && !st_.finished) {
      more_.clear();
      for (std::size_t i = 0; i < replies; ++i)
        more_ += st_.pop_command;
      net::write(sock_, net::buffer(more_));
    }
    if (!st_.finished)
      do_read();
  }

  // Every complete MQTT packet in [p, end): PUBLISH payloads counted, CONNACK and SUBACK
  // skipped. Returns where the incomplete rest begins.
  const char* parse_mqtt(const char* p, const char* end) {
    while (end - p >= 2) {
      std::size_t i = 1;
      std::size_t remaining = 0;
      bool complete = false;
      for (int shift = 0; i < 5 && p + i < end; shift += 7) {
        const auto b = static_cast<unsigned char>(p[i++]);
        remaining |= static_cast<std::size_t>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          complete = true;
          break;
        }
      }
      if (!complete || static_cast<std::size_t>(end - p) < i + remaining)
        break;
      if ((static_cast<unsigned char>(p[0]) >> 4) == 3) { // PUBLISH, QoS 0
        const char* q = p + i;
        const std::size_t topic =
            (static_cast<std::size_t>(static_cast<unsigned char>(q[0])) << 8) |
            static_cast<unsigned char>(q[1]);
        on_payload(q + 2 + topic, remaining - 2 - topic);
      }
      p += i + remaining;
    }
    return p;
  }

  // One pub/sub push at p: the fast path for "message" on our channel, the general parser for
  // anything else (the SUBSCRIBE confirmation). Bytes consumed, 0 if incomplete.
  std::size_t parse_push(const char* p, const char* end) {
    const std::string& pre = st_.push_prefix;
    const auto avail = static_cast<std::size_t>(end - p);
    if (std::memcmp(p, pre.data(), std::min(avail, pre.size())) == 0) {
      if (avail <= pre.size())
        return 0;
      const char* c = p + pre.size() - 1; // at the '$' of the payload's length
      long len = 0;
      if (!read_int_line(c, end, '$', len) || end - c < len + 2)
        return 0;
      on_payload(c, static_cast<std::size_t>(len));
      return static_cast<std::size_t>(c + len + 2 - p);
    }
    std::string_view first, last;
    return parse_resp(p, end, first, last);
  }

  void on_payload(const char* p, std::size_t n) {
    if (n < 16)
      return;
    const std::uint64_t seq = get_u64(p);
    if (seq == probe_seq) {
      if (!ready_) {
        ready_ = true;
        ++st_.ready;
      }
      return;
    }
    const std::uint64_t t = now_ns();
    st_.t_last = t;
    ++st_.received;
    ++received_;
    const std::uint64_t sent = get_u64(p + 8);
    if (t > sent)
      st_.lat_us.push_back(static_cast<std::uint32_t>((t - sent) / 1000));
    if (seq >= st_.opt.messages)
      return;
    if (last_ >= 0 && static_cast<std::int64_t>(seq) < last_)
      ++st_.reorders;
    last_ = std::max<std::int64_t>(last_, static_cast<std::int64_t>(seq));
    auto& seen = st_.queue ? st_.seen_queue : seen_;
    if (seen[seq])
      ++st_.dups;
    seen[seq] = 1;
    if (!st_.queue && received_ == st_.opt.messages)
      ++st_.subs_done;
  }

  shared_state& st_;
  tcp::socket sock_;
  std::vector<char> buf_;
  std::size_t have_ = 0;
  int rcvbuf_;
  std::size_t read_bytes_;
  std::vector<std::string_view> items_; // values of one BLMPOP reply, reused
  std::string more_;                    // BLMPOPs to reissue, reused
  bool ready_ = false;
  std::uint64_t received_ = 0;
  std::int64_t last_ = -1;
  std::vector<std::uint8_t> seen_;
};

class publisher : public std::enable_shared_from_this<publisher> {
 public:
  explicit publisher(shared_state& st)
      : st_(st)
      , sock_(*st.ioc)
      , timer_(*st.ioc)
      , payload_(st.opt.payload, 'x') {
    // Everything but the payload is the same for every message: build it once.
    if (st_.mqtt) {
      head_ = mqtt_publish_head(st_.channel, payload_.size());
    } else if (!st_.redis) {
      append_frame(head_, st_.channel);
      append_be32(head_, static_cast<std::uint32_t>(payload_.size()));
    } else {
      head_ = "*3\r\n";
      append_bulk(head_, st_.queue ? "RPUSH" : "PUBLISH");
      append_bulk(head_, st_.channel);
      head_ += '$';
      head_ += std::to_string(payload_.size());
      head_ += "\r\n";
      tail_ = "\r\n";
    }
  }

  void start() {
    sock_.connect(st_.ep);
    sock_.set_option(tcp::no_delay(true));
    if (st_.mqtt) {
      net::write(sock_, net::buffer(mqtt_connect(next_client_id("pub"))));
    } else if (!st_.redis) {
      std::string hello;
      append_frame(hello, "/null");
      net::write(sock_, net::buffer(hello));
    }
    drain();
    probe();
  }

 private:
  void drain() { // replies to PUBLISH/LPUSH, or nothing
    sock_.async_read_some(net::buffer(sink_),
                          [self = shared_from_this()](const error_code& ec, std::size_t) {
                            if (!ec)
                              self->drain();
                          });
  }

  void append_message(std::string& out, std::uint64_t seq, std::uint64_t ts) {
    out.append(head_);
    const std::size_t at = out.size();
    out.append(payload_);
    put_u64(out.data() + at, seq);
    put_u64(out.data() + at + 8, ts);
    out.append(tail_);
  }

  void probe() {
    if (st_.ready >= st_.opt.subs) {
      // Let the probes drain before measuring.
      timer_.expires_after(std::chrono::milliseconds(100));
      timer_.async_wait([self = shared_from_this()](const error_code&) { self->begin(); });
      return;
    }
    std::string out;
    for (int i = 0; i < (st_.queue ? st_.opt.subs : 1); ++i)
      append_message(out, probe_seq, now_ns());
    net::write(sock_, net::buffer(out));
    timer_.expires_after(std::chrono::milliseconds(20));
    timer_.async_wait([self = shared_from_this()](const error_code&) { self->probe(); });
  }

  void begin() {
    st_.started = true;
    if (st_.opt.server_pid)
      std::tie(st_.server_cpu0, st_.server_wait0) = sched_s(std::to_string(st_.opt.server_pid));
    std::tie(st_.client_cpu0, st_.client_wait0) = sched_s("self");
    st_.t_start = now_ns();
    if (st_.opt.rate == 0)
      send_burst();
    else
      tick();
  }

  void send_burst() {
    if (next_ >= st_.opt.messages) {
      st_.publishing_done = true;
      return;
    }
    out_.clear();
    const std::uint64_t ts = now_ns();
    for (int i = 0; i < 512 && next_ < st_.opt.messages; ++i)
      append_message(out_, next_++, ts);
    net::async_write(sock_, net::buffer(out_),
                     [self = shared_from_this()](const error_code& ec, std::size_t) {
                       if (!ec)
                         self->send_burst();
                     });
  }

  // Fixed rate: every millisecond, send what is due by now.
  void tick() {
    const std::uint64_t elapsed = now_ns() - st_.t_start;
    const std::uint64_t due =
        std::min<std::uint64_t>(st_.opt.messages, elapsed * st_.opt.rate / 1000000000ULL + 1);
    if (!writing_ && next_ < due) {
      out_.clear();
      while (next_ < due)
        append_message(out_, next_++, now_ns());
      writing_ = true;
      net::async_write(
          sock_, net::buffer(out_),
          [self = shared_from_this()](const error_code&, std::size_t) { self->writing_ = false; });
    }
    if (next_ >= st_.opt.messages) {
      st_.publishing_done = true;
      return;
    }
    ++ticks_;
    timer_.expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(st_.t_start) +
                                                            std::chrono::milliseconds(ticks_)));
    timer_.async_wait([self = shared_from_this()](const error_code&) { self->tick(); });
  }

  shared_state& st_;
  tcp::socket sock_;
  net::steady_timer timer_;
  std::string payload_;
  std::string head_; // the bytes before each payload
  std::string tail_; // and after it
  std::string out_;
  std::array<char, 65536> sink_{};
  std::uint64_t next_ = 0;
  std::uint64_t ticks_ = 0;
  bool writing_ = false;
};

std::uint32_t percentile(std::vector<std::uint32_t>& v, double q) {
  if (v.empty())
    return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

void raise_nofile() {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
}

int run_flow(shared_state& st) {
  std::vector<std::shared_ptr<subscriber>> subs;
  for (int i = 0; i < st.opt.subs; ++i) {
    subs.push_back(std::make_shared<subscriber>(st));
    subs.back()->start();
  }
  auto pub = std::make_shared<publisher>(st);
  pub->start();
  net::steady_timer watch(*st.ioc);
  std::uint64_t last_received = 0;
  double server_cpu = -1;
  double client_cpu = -1;
  double server_wait = -1;
  double client_wait = -1;
  double per_server_cpu_s = -1;
  auto last_progress = std::chrono::steady_clock::now();
  std::function<void()> check = [&] {
    const std::uint64_t expected = st.queue ? st.opt.messages : st.opt.messages * st.opt.subs;
    if (st.received != last_received) {
      last_received = st.received;
      last_progress = std::chrono::steady_clock::now();
    }
    const bool complete = st.started && st.received >= expected;
    const bool stalled = st.publishing_done &&
                         std::chrono::steady_clock::now() - last_progress > std::chrono::seconds(3);
    if (complete || stalled) {
      st.finished = true;
      const double wall = static_cast<double>(now_ns() - st.t_start) / 1e9;
      if (st.opt.server_pid) {
        const auto [cpu, wait] = sched_s(std::to_string(st.opt.server_pid));
        server_cpu = (cpu - st.server_cpu0) / wall;
        server_wait = (wait - st.server_wait0) / wall;
      }
      const auto [cpu, wait] = sched_s("self");
      client_cpu = (cpu - st.client_cpu0) / wall;
      client_wait = (wait - st.client_wait0) / wall;
      // Deliveries per CPU-second of the server: a figure other jobs' load does not move much.
      if (server_cpu > 0)
        per_server_cpu_s = static_cast<double>(st.received) / (server_cpu * wall);
      st.ioc->stop();
      return;
    }
    watch.expires_after(std::chrono::milliseconds(complete ? 0 : 1));
    watch.async_wait([&](const error_code&) { check(); });
  };
  check();
  st.ioc->run();

  const std::uint64_t expected = st.queue ? st.opt.messages : st.opt.messages * st.opt.subs;
  const double secs = static_cast<double>(st.t_last - st.t_start) / 1e9;
  std::uint64_t unique = 0;
  if (st.queue)
    unique = static_cast<std::uint64_t>(std::count(st.seen_queue.begin(), st.seen_queue.end(), 1));
  else
    unique = st.received - st.dups;
  std::cout << "RESULT proto=" << st.opt.proto << " mode=" << st.opt.mode << " subs=" << st.opt.subs
            << " messages=" << st.opt.messages << " rate=" << st.opt.rate
            << " deliveries=" << st.received << " seconds=" << secs << " deliveries_per_s="
            << static_cast<std::uint64_t>(secs > 0 ? static_cast<double>(st.received) / secs : 0)
            << " p50_us=" << percentile(st.lat_us, 0.50)
            << " p99_us=" << percentile(st.lat_us, 0.99)
            << " lost=" << (expected > unique ? expected - unique : 0) << " dup=" << st.dups
            << " reorder=" << st.reorders << " server_cpu=" << server_cpu
            << " client_cpu=" << client_cpu << " server_runq=" << server_wait
            << " client_runq=" << client_wait
            << " deliveries_per_server_cpu_s=" << static_cast<std::int64_t>(per_server_cpu_s)
            << std::endl;
  return 0;
}

// Redis's own count of subscribers of `channel` (PUBSUB NUMSUB), over a new connection.
long redis_numsub(shared_state& st, const std::string& channel) {
  tcp::socket c(*st.ioc);
  c.connect(st.ep);
  net::write(c, net::buffer(resp_command({"PUBSUB", "NUMSUB", channel})));
  std::string reply;
  std::array<char, 4096> buf{};
  for (;;) { // *2 $len channel :count
    reply.append(buf.data(), c.read_some(net::buffer(buf)));
    const auto colon = reply.rfind(':');
    if (colon != std::string::npos && reply.find("\r\n", colon) != std::string::npos)
      return std::stol(reply.substr(colon + 1));
  }
}

int run_idle(shared_state& st) {
  raise_nofile();
  const long before = st.opt.server_pid ? rss_kib(st.opt.server_pid) : -1;
  std::vector<std::shared_ptr<subscriber>> subs;
  // Connect in waves so the listen backlog never overflows. Each reads (into a small buffer)
  // only to see the probe below.
  for (int i = 0; i < st.opt.conns; i += 500) {
    for (int j = i; j < std::min(st.opt.conns, i + 500); ++j) {
      subs.push_back(std::make_shared<subscriber>(st, 0, 4096));
      subs.back()->start(true);
    }
    st.ioc->restart();
    while (!std::all_of(subs.begin() + i, subs.end(), [](auto& s) { return s->connected; }))
      st.ioc->run_one();
  }
  // Publish a probe until every connection has received it: then all subscriptions are
  // registered and the RSS below is that of N live subscribers, not of connections whose
  // subscribe frame is still unread.
  tcp::socket pub(*st.ioc);
  pub.connect(st.ep);
  std::string probe;
  if (st.mqtt)
    probe = mqtt_connect(next_client_id("probe"));
  else if (!st.redis)
    append_frame(probe, "/null");
  std::string payload(st.opt.payload, 'x');
  put_u64(payload.data(), probe_seq);
  std::string one;
  if (st.mqtt) {
    one = mqtt_publish_head(st.channel, payload.size()) + payload;
  } else if (!st.redis) {
    append_frame(one, st.channel);
    append_frame(one, payload);
  } else {
    one = resp_command({"PUBLISH", st.channel, payload});
  }
  std::array<char, 4096> sink{};
  for (int round = 0; round < 100 && st.ready < st.opt.conns; ++round) {
    probe += one;
    net::write(pub, net::buffer(probe));
    probe.clear();
    st.ioc->restart();
    st.ioc->run_for(std::chrono::milliseconds(200));
    error_code ec;
    pub.non_blocking(true);
    while (pub.read_some(net::buffer(sink), ec) > 0) { // PUBLISH replies
    }
    pub.non_blocking(false);
  }
  const long numsub = st.redis ? redis_numsub(st, st.channel) : -1;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const long after = st.opt.server_pid ? rss_kib(st.opt.server_pid) : -1;
  std::cout << "RESULT proto=" << st.opt.proto << " mode=idle conns=" << st.opt.conns
            << " reached=" << st.ready << " numsub=" << numsub << " rss_before_kib=" << before
            << " rss_after_kib=" << after
            << " bytes_per_conn=" << (after - before) * 1024 / st.opt.conns << std::endl;
  return st.ready == st.opt.conns ? 0 : 3;
}

int run_stuck(shared_state& st) {
  const long before = st.opt.server_pid ? rss_kib(st.opt.server_pid) : -1;
  auto stuck = std::make_shared<subscriber>(st, 4096);
  stuck->start(false);
  while (!stuck->connected)
    st.ioc->run_one();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  tcp::socket pub(*st.ioc);
  pub.connect(st.ep);
  std::string out;
  if (!st.redis)
    append_frame(out, "/null");
  std::string payload(st.opt.payload, 'x');
  long peak = 0;
  std::array<char, 65536> sink{};
  for (std::uint64_t i = 0; i < st.opt.messages;) {
    for (int k = 0; k < 1000 && i < st.opt.messages; ++k, ++i) {
      put_u64(payload.data(), i);
      if (!st.redis) {
        append_frame(out, st.channel);
        append_frame(out, payload);
      } else {
        out += "*3\r\n";
        append_bulk(out, "PUBLISH");
        append_bulk(out, st.channel);
        append_bulk(out, payload);
      }
    }
    net::write(pub, net::buffer(out));
    out.clear();
    error_code ec;
    pub.non_blocking(true);
    while (pub.read_some(net::buffer(sink), ec) > 0) {
    }
    pub.non_blocking(false);
    if (i % 100000 == 0 && st.opt.server_pid)
      peak = std::max(peak, rss_kib(st.opt.server_pid));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const long after = st.opt.server_pid ? rss_kib(st.opt.server_pid) : -1;
  peak = std::max(peak, after);
  // Did the server disconnect the stuck subscriber? Read what it has until EOF or 3 s.
  const int fd = stuck->native_fd();
  bool closed = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!closed && std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      const auto n = ::recv(fd, sink.data(), sink.size(), 0);
      closed = n <= 0;
    }
  }
  std::cout << "RESULT proto=" << st.opt.proto << " mode=stuck messages=" << st.opt.messages
            << " rss_before_kib=" << before << " rss_peak_kib=" << peak
            << " rss_after_kib=" << after << " stuck_disconnected=" << (closed ? 1 : 0)
            << std::endl;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--proto")
      opt.proto = v;
    else if (k == "--port")
      opt.port = static_cast<std::uint16_t>(std::stoi(v));
    else if (k == "--mode")
      opt.mode = v;
    else if (k == "--subs")
      opt.subs = std::stoi(v);
    else if (k == "--messages")
      opt.messages = std::stoull(v);
    else if (k == "--payload")
      opt.payload = std::max<std::size_t>(16, std::stoull(v));
    else if (k == "--rate")
      opt.rate = std::stoull(v);
    else if (k == "--conns")
      opt.conns = std::stoi(v);
    else if (k == "--server-pid")
      opt.server_pid = std::stoi(v);
    else if (k == "--window")
      opt.window = std::stoi(v);
    else if (k == "--count")
      opt.count = std::stoi(v);
    else {
      std::cerr << "unknown option " << k << '\n';
      return 1;
    }
  }
  if (opt.port == 0) {
    std::cerr << "--port is required\n";
    return 1;
  }
  net::io_context ioc(1);
  shared_state st;
  st.opt = opt;
  st.ioc = &ioc;
  st.ep = tcp::endpoint(net::ip::address_v4::loopback(), opt.port);
  st.redis = opt.proto == "redis";
  st.mqtt = opt.proto == "mqtt";
  st.queue = opt.mode == "queue";
  const bool topic_like = !st.queue;
  st.channel = st.queue ? "/queue/bench" : (opt.mode == "idle" ? "/topic/idle" : "/topic/bench");
  if (opt.mode == "stuck")
    st.channel = "/topic/stuck";
  if (st.mqtt) { // MQTT topic T is newsdesk's channel /topic/T; Mosquitto takes it as it is
    if (st.queue || opt.mode == "stuck") {
      std::cerr << "--proto mqtt runs the topic and idle modes\n";
      return 1;
    }
    st.channel = opt.mode == "idle" ? "idle" : "bench";
  }
  (void)topic_like;
  st.push_prefix = "*3\r\n";
  append_bulk(st.push_prefix, "message");
  append_bulk(st.push_prefix, st.channel);
  st.push_prefix += '$';
  st.pop_command = blmpop_command(st.channel, opt.count);
  if (st.queue)
    st.seen_queue.assign(opt.messages, 0);
  st.lat_us.reserve(static_cast<std::size_t>(opt.messages) * static_cast<std::size_t>(opt.subs));
  try {
    if (opt.mode == "topic" || opt.mode == "queue")
      return run_flow(st);
    if (opt.mode == "idle")
      return run_idle(st);
    if (opt.mode == "stuck")
      return run_stuck(st);
  } catch (const std::exception& e) {
    std::cerr << "broker_loadgen: " << e.what() << '\n';
    return 1;
  }
  std::cerr << "unknown mode " << opt.mode << '\n';
  return 1;
}
