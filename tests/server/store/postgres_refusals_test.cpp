// What newsdesk says when PostgreSQL refuses it. The refusals themselves, from a real server,
// are in cluster_test.cpp; here the texts PostgreSQL versions send that no test server does.
#include "server/store/postgres_refusals.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::server;

TEST_CASE("every PostgreSQL text for SQLSTATE 53300 is out of slots, and nothing else is") {
  for (const char* said :
       {"connection to server at \"db\" (10.0.0.5), port 5432 failed: FATAL:  sorry, too many "
        "clients already",
        "FATAL:  remaining connection slots are reserved for non-replication superuser "
        "connections",
        "FATAL:  remaining connection slots are reserved for roles with the SUPERUSER attribute",
        "FATAL:  too many connections for role \"newsdesk\"",
        "FATAL:  too many connections for database \"newsdesk\""})
    CHECK_MESSAGE(out_of_connection_slots(said), said);
  CHECK_FALSE(out_of_connection_slots("connection to server at \"db\", port 5432 failed: "
                                      "Connection refused"));
  CHECK_FALSE(out_of_connection_slots("FATAL:  password authentication failed for user \"x\""));
}

TEST_CASE("the out-of-slots message names the budget, how it splits, and what to change") {
  const auto message = out_of_slots_message("FATAL:  sorry, too many clients already", 5);
  CHECK(message.find("(FATAL:  sorry, too many clients already)") != std::string::npos);
  CHECK(message.find("store_max_connections = 5 connections (4 for queries, 1 to LISTEN)") !=
        std::string::npos);
  CHECK(message.find("max_connections") != std::string::npos);
  CHECK(message.find("NEWSDESK_STORE_MAX_CONNECTIONS") != std::string::npos);
}
