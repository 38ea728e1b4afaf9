#include "server/store/postgres_refusals.hpp"

#include <array>

namespace newsdesk::server {

bool out_of_connection_slots(std::string_view libpq_message) {
  // PostgreSQL's texts for SQLSTATE 53300: the server is full ("sorry, too many clients
  // already"), only superuser slots are left (the wording changed in PostgreSQL 16, both start
  // the same), or a role's or a database's CONNECTION LIMIT is reached.
  static constexpr std::array<std::string_view, 4> texts{
      "too many clients already", "remaining connection slots are reserved",
      "too many connections for role", "too many connections for database"};
  for (auto text : texts)
    if (libpq_message.find(text) != std::string_view::npos)
      return true;
  return false;
}

std::string out_of_slots_message(std::string_view cause, std::size_t budget) {
  const auto queries = std::to_string(budget - 1);
  return "PostgreSQL has no connection slot left for newsdesk (" + std::string(cause) +
         "): each instance opens up to store_max_connections = " + std::to_string(budget) +
         " connections (" + queries +
         " for queries, 1 to LISTEN); raise the server's max_connections (or the role's or "
         "database's CONNECTION LIMIT) to that many per instance plus every other client, or "
         "lower store_max_connections (NEWSDESK_STORE_MAX_CONNECTIONS, at least 2)";
}

std::string login_refusal(std::string_view libpq_message) {
  // PostgreSQL's FATAL texts for SQLSTATE 28P01 (invalid_password), 28000
  // (invalid_authorization_specification: no LOGIN, no pg_hba.conf entry, an unknown role) and
  // 3D000 (invalid_catalog_name), and libpq's own for a password it was not given.
  static constexpr std::array<std::string_view, 8> texts{"password authentication failed",
                                                         "is not permitted to log in",
                                                         "no pg_hba.conf entry",
                                                         "pg_hba.conf rejects connection",
                                                         "role \"",
                                                         "database \"",
                                                         "no password supplied",
                                                         "authentication failed for user"};
  for (auto text : texts) {
    const auto at = libpq_message.find(text);
    if (at == std::string_view::npos)
      continue;
    // "role "x" does not exist" and "database "x" does not exist" only.
    if ((text == "role \"" || text == "database \"") &&
        libpq_message.find("does not exist", at) == std::string_view::npos)
      continue;
    // From the server's words ("FATAL:  ...", or libpq's "fe_sendauth: ...") to the line's end.
    auto from = libpq_message.rfind("FATAL:", at);
    from = from == std::string_view::npos ? libpq_message.rfind(": ", at) : from + 6;
    from = from == std::string_view::npos ? at : from;
    auto said = libpq_message.substr(from);
    said = said.substr(0, said.find('\n'));
    while (!said.empty() && (said.front() == ' ' || said.front() == ':'))
      said.remove_prefix(1);
    while (!said.empty() && said.back() == ' ')
      said.remove_suffix(1);
    return std::string(said);
  }
  return {};
}

std::string login_refusal_message(std::string_view refusal) {
  return std::string(refusal) +
         ": check store credentials (the user and password in store_path; the role needs LOGIN "
         "and a pg_hba.conf entry for this host)";
}

std::string privilege_hint() {
  return " (newsdesk's role creates and alters its tables: it must own the database, or have "
         "CREATE on schema public, e.g. GRANT CREATE ON SCHEMA public TO newsdesk; see README, "
         "\"Several instances on PostgreSQL\")";
}

} // namespace newsdesk::server
