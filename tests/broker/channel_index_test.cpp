#include <doctest/doctest.h>

#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>

#include "broker/channel_index.hpp"
#include "broker/context.hpp"
#include "broker/peer.hpp"

using namespace newsdesk::broker;
using detail::channel_index;

namespace {

// A peer of no wire protocol at all: the index must need nothing more than peer.hpp.
class bare_peer final : public detail::peer {
 public:
  bare_peer()
      : peer(nullptr, -1) {}
  void start() override {}
  void flush() override {}
  void resume() override {}
  void begin_drain() override {}
  void close(detail::close_reason) override {}
  void do_read() override {}
  void do_write() override {}
  void written_all() override {}
  std::optional<detail::close_reason> read_overdue(detail::steady::time_point) const override {
    return std::nullopt;
  }
};

struct fixture {
  explicit fixture(config cfg = {})
      : ctx(ioc, std::move(cfg))
      , index(ctx) {}
  std::uint64_t channels() const { return ctx.ctr.channels_current.load(); }
  std::uint64_t subscribers() const { return ctx.ctr.subscribers_current.load(); }

  boost::asio::io_context ioc;
  detail::context ctx;
  channel_index index;
};

} // namespace

TEST_CASE("a channel lives while it has a subscriber and is erased with its last one") {
  fixture f;
  bare_peer a, b;
  REQUIRE(f.index.subscribe(a, "/topic/x"));
  REQUIRE(f.index.subscribe(b, "/topic/x"));
  const auto ch = f.index.find("/topic/x");
  REQUIRE(ch);
  CHECK(a.chan_ == ch);
  CHECK(b.chan_ == ch);
  CHECK(ch->subs.size() == 2);
  CHECK_FALSE(ch->is_queue);
  CHECK(f.channels() == 1);
  CHECK(f.subscribers() == 2);

  f.index.unsubscribe(a);
  CHECK(a.chan_ == nullptr);
  CHECK(f.index.find("/topic/x") == ch);
  f.index.unsubscribe(b);
  CHECK(f.index.find("/topic/x") == nullptr);
  CHECK(f.channels() == 0);
  CHECK(f.subscribers() == 0);
}

TEST_CASE("leaving moves the last subscriber into the hole, so both directions stay consistent") {
  fixture f;
  bare_peer a, b, c;
  REQUIRE(f.index.subscribe(a, "/queue/jobs"));
  REQUIRE(f.index.subscribe(b, "/queue/jobs"));
  REQUIRE(f.index.subscribe(c, "/queue/jobs"));
  const auto ch = f.index.find("/queue/jobs");
  REQUIRE(ch);
  CHECK(ch->is_queue);
  ch->rr = 2;

  f.index.unsubscribe(a);
  REQUIRE(ch->subs.size() == 2);
  CHECK(ch->subs[0] == &c);
  CHECK(c.chan_index_ == 0);
  CHECK(ch->subs[1] == &b);
  CHECK(b.chan_index_ == 1);
  CHECK(ch->rr == 0); // the turn pointed past the end
  f.index.unsubscribe(c);
  f.index.unsubscribe(b);
}

TEST_CASE("a network subscribe over max_channels is refused; an in-process one is not") {
  config cfg;
  cfg.max_channels = 1;
  fixture f(cfg);
  bare_peer a, b;
  REQUIRE(f.index.subscribe(a, "/topic/a"));
  CHECK_FALSE(f.index.subscribe(b, "/topic/b"));
  CHECK(b.chan_ == nullptr);
  CHECK(f.index.find("/topic/b") == nullptr);
  CHECK(f.subscribers() == 1);

  auto local = std::make_shared<detail::local_subscriber>();
  local->handler = [](message_ptr) {};
  f.index.subscribe_local(local, "/topic/relay");
  CHECK(f.index.find("/topic/relay"));
  CHECK(f.channels() == 2);
  f.index.unsubscribe(a);
  f.index.unsubscribe_local(*local);
}

TEST_CASE("an in-process subscriber keeps its channel until it leaves, and is dropped there") {
  fixture f;
  auto s = std::make_shared<detail::local_subscriber>();
  s->handler = [](message_ptr) {};
  f.index.subscribe_local(s, "/topic/x");
  const auto ch = f.index.find("/topic/x");
  REQUIRE(ch);
  CHECK(s->chan == ch.get());
  CHECK(f.subscribers() == 1);

  f.index.unsubscribe_local(*s);
  CHECK(f.index.find("/topic/x") == nullptr);
  CHECK(s->cancelled.load());
  CHECK_FALSE(s->handler);
  CHECK(f.subscribers() == 0);
  f.index.unsubscribe_local(*s); // a second removal finds nothing to do
  CHECK(f.subscribers() == 0);
}

TEST_CASE("clear drops every in-process subscriber and forgets every channel") {
  fixture f;
  auto s = std::make_shared<detail::local_subscriber>();
  s->handler = [](message_ptr) {};
  f.index.subscribe_local(s, "/topic/x");
  f.index.clear();
  CHECK(f.index.channels().empty());
  CHECK(s->cancelled.load());
  CHECK(s->chan == nullptr);
  CHECK(f.subscribers() == 0);
}
