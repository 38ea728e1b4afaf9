// What newsdesk tells an operator when PostgreSQL refuses it for a reason the operator must fix:
// no connection slot left (SQLSTATE 53300: the server's max_connections, or a role's or
// database's CONNECTION LIMIT, is reached), or a missing privilege (42501: the role may not
// create newsdesk's tables), or a refused login. One message each, naming the setting or the SQL
// that fixes it, used wherever the refusal can surface (the store's pool, its migrations, the
// LISTEN connection).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace newsdesk::server {

// True when libpq's message for a failed connection says PostgreSQL had no slot left for it.
// A failed connection carries no SQLSTATE in libpq's API, so the server's texts for 53300 are
// matched (in English, the server's default; a server set to another language is not
// recognised, and its refusal is reported as it came).
bool out_of_connection_slots(std::string_view libpq_message);

// "PostgreSQL has no connection slot left for newsdesk (<cause>): ..." with the budget
// (store_max_connections), how it splits, and what to raise or lower.
std::string out_of_slots_message(std::string_view cause, std::size_t budget);

// When libpq's message for a failed connection says PostgreSQL refused newsdesk's login (a wrong
// or missing password, a role without LOGIN or gone, no pg_hba.conf entry, no such database):
// the server's words for it ("password authentication failed for user "newsdesk""); empty
// otherwise. Matched as out_of_connection_slots is (English texts).
std::string login_refusal(std::string_view libpq_message);

// "<refusal>: check store credentials (...)": what an operator reads in the log and the notice.
std::string login_refusal_message(std::string_view refusal);

// Added to an error whose SQLSTATE is 42501 (insufficient_privilege): what the role needs.
std::string privilege_hint();

} // namespace newsdesk::server
