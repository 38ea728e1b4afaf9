#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "broker/stats.hpp"

using namespace newsdesk::broker;

TEST_CASE("stats serialise to JSON with drops and disconnects by reason") {
  stats_snapshot s;
  s.messages_in = 5;
  s.drops.queue_full = 2;
  s.disconnects.hard_limit = 1;
  const nlohmann::json j = s;
  CHECK(j.at("messages_in") == 5);
  CHECK(j.at("drops").at("queue_full") == 2);
  CHECK(j.at("disconnects").at("hard_limit") == 1);
  CHECK(j.contains("backlog_messages"));
  CHECK(j.contains("connections_current"));
}
