#include "server/store/postgres_notices.hpp"

#include "server/core/log.hpp"

#include <libpq-fe.h>

#include <string>
#include <string_view>

namespace newsdesk::server {

namespace {

struct severity {
  std::string_view name;
  log_level level;
};

// PostgreSQL's severities (its documentation's "Message Severity Levels"). Only a name from
// this list goes into the line as it is: the text comes from the server, so anything else is
// logged as "unknown" rather than trusted to be a plain word.
constexpr severity severities[] = {
    {"DEBUG", log_level::debug}, {"LOG", log_level::info},     {"INFO", log_level::info},
    {"NOTICE", log_level::info}, {"WARNING", log_level::warn}, {"ERROR", log_level::warn},
    {"FATAL", log_level::warn},  {"PANIC", log_level::warn},
};
constexpr severity unknown_severity{"unknown", log_level::warn};

severity severity_of(const PGresult* notice) {
  // The untranslated name first: a server set to another language still says FATAL here.
  const char* name = PQresultErrorField(notice, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (!name)
    name = PQresultErrorField(notice, PG_DIAG_SEVERITY);
  if (!name)
    return unknown_severity;
  // DEBUG1 to DEBUG5 are all DEBUG.
  std::string_view text(name);
  if (text.starts_with("DEBUG"))
    text = "DEBUG";
  for (const auto& s : severities)
    if (s.name == text)
      return s;
  return unknown_severity;
}

// A notice receiver rather than a notice processor: it gets the notice's fields, so the line
// carries its severity and the message without libpq's "FATAL:  " prefix and trailing newline.
void receive(void* connection, const PGresult* notice) {
  const auto s = severity_of(notice);
  const char* text = PQresultErrorField(notice, PG_DIAG_MESSAGE_PRIMARY);
  std::string_view message = text ? text : PQresultErrorMessage(notice);
  while (!message.empty() && message.back() == '\n')
    message.remove_suffix(1);
  log(s.level,
      "msg=\"postgres notice\" connection=" + std::string(static_cast<const char*>(connection)) +
          " severity=" + std::string(s.name) + " text=" + logfmt_quoted(message));
}

} // namespace

void log_notices(pg_conn* conn, const char* connection) {
  if (conn)
    PQsetNoticeReceiver(conn, receive, const_cast<char*>(connection));
}

} // namespace newsdesk::server
