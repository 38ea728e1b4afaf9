// The shared store's schedule: claims, leases, the pruning claim and the event log (see
// cluster_store in server/news/headline_store.hpp).
#include "server/store/postgres_store_impl.hpp"

namespace newsdesk::server {

using namespace detail;

namespace {

// The schedule row retention pruning is claimed through. Site names are [a-z0-9_-]+, so no site
// can take it.
constexpr const char* prune_row = "~prune";

} // namespace

claim_result postgres_store::claim(std::string_view site, std::string_view owner,
                                   std::chrono::milliseconds lease, bool manual,
                                   std::chrono::milliseconds manual_min_interval) {
  auto& d = *impl_;
  const std::string name(site), who(owner);
  return d.transaction([&](PGconn* c) -> claim_result {
    d.run(c, "INSERT INTO schedule (site) VALUES ($1) ON CONFLICT DO NOTHING", {name},
          "cannot schedule the site");
    if (manual) {
      // A manual refresh makes the site due now, at most once per manual_min_interval.
      auto r =
          d.run(c,
                "SELECT greatest(0, ceil(extract(epoch FROM last_manual_at + $2 * interval "
                "'1 millisecond' - now()) * 1000))::bigint FROM schedule WHERE site = $1 "
                "AND last_manual_at IS NOT NULL FOR UPDATE",
                {name, std::to_string(manual_min_interval.count())}, "cannot read the schedule");
      if (PQntuples(r.get()) && int_at(r, 0, 0) > 0)
        return {claim_status::rate_limited, std::chrono::milliseconds(int_at(r, 0, 0))};
      d.run(c, "UPDATE schedule SET due_at = now(), last_manual_at = now() WHERE site = $1", {name},
            "cannot mark the site due");
    }
    // SKIP LOCKED: a row another instance is claiming right now is its, not worth waiting for.
    // A lease counts while it runs and its holder's heartbeat does too: the lease of an instance
    // that stopped beating (killed, frozen, cut off) is taken over when its heartbeat runs out,
    // not when the lease does. A loser looks again when the lease or the heartbeat ends.
    auto r = d.run(
        c,
        "WITH slot AS (SELECT s.due_at, s.owner IS NOT NULL AND s.lease_until > now() AND "
        "s.owner <> $2 AND coalesce(i.alive_until > now(), false) AS held, "
        "least(s.lease_until, i.alive_until) AS held_until FROM schedule s LEFT JOIN instances i "
        "ON i.owner = s.owner WHERE s.site = $1 FOR UPDATE OF s SKIP LOCKED) "
        "SELECT held, due_at <= now(), greatest(0, ceil(extract(epoch FROM CASE WHEN held THEN "
        "greatest(due_at, held_until) ELSE due_at END - now()) * 1000))::bigint FROM slot",
        {name, who}, "cannot read the schedule");
    if (PQntuples(r.get()) == 0)
      return {claim_status::leased, std::chrono::milliseconds(100)};
    const auto wait = std::chrono::milliseconds(int_at(r, 0, 2));
    if (bool_at(r, 0, 0))
      return {claim_status::leased, wait};
    if (!bool_at(r, 0, 1))
      return {claim_status::not_due, wait};
    if (!manual)
      if (auto left_to_others = d.share_wait_left(c, name, who); left_to_others.count() > 0)
        return {claim_status::deferred, left_to_others};
    d.run(c,
          "UPDATE schedule SET owner = $2, last_owner = $2, lease_until = now() + $3 * "
          "interval '1 millisecond' WHERE site = $1",
          {name, who, std::to_string(lease.count())}, "cannot take the lease");
    return {claim_status::claimed, {}};
  });
}

// Inside a claim of a due site (its row locked): 0 when `owner` may take it now, else how much
// longer it is left to instances with fewer sites. Counts the sites' last claimers over every
// schedule row: a scan of at most store_limits::max_sites rows, on claims of due sites only.
std::chrono::milliseconds postgres_store::impl::share_wait_left(PGconn* c, const std::string& site,
                                                                const std::string& owner) {
  auto r =
      run(c,
          "WITH live AS (SELECT owner FROM instances WHERE alive_until > now() UNION SELECT $2), "
          "counts AS (SELECT live.owner, count(s.site) AS sites FROM live LEFT JOIN schedule s ON "
          "s.last_owner = live.owner AND s.site <> $3 GROUP BY live.owner), "
          "mine AS (SELECT (SELECT sites FROM counts WHERE owner = $2) + CASE WHEN last_owner IS "
          "DISTINCT FROM $2 THEN 1 ELSE 0 END AS after, due_at FROM schedule WHERE site = $1) "
          "SELECT CASE WHEN mine.after > ceil((SELECT count(*) FROM schedule WHERE site <> "
          "$3)::numeric "
          "/ (SELECT count(*) FROM live)) OR mine.after >= (SELECT min(sites) FROM counts) + 2 "
          "THEN greatest(0, ceil(extract(epoch FROM mine.due_at + $4 * interval '1 millisecond' - "
          "now()) * 1000))::bigint ELSE 0 END FROM mine",
          {site, owner, prune_row, std::to_string(cluster_store::share_wait.count())},
          "cannot count the claims");
  return std::chrono::milliseconds(PQntuples(r.get()) ? int_at(r, 0, 0) : 0);
}

std::vector<scheduled_site> postgres_store::scheduled_sites() {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c,
                   "SELECT s.site, floor(extract(epoch FROM now() - s.due_at) * 1000)::bigint, "
                   "s.owner IS NOT NULL AND s.lease_until > now() AND coalesce(i.alive_until > "
                   "now(), false) FROM schedule s LEFT JOIN instances i ON i.owner = s.owner "
                   "WHERE s.site <> $1 ORDER BY s.site",
                   {prune_row}, "cannot read the schedule");
    std::vector<scheduled_site> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back(
          {text_at(r, i, 0), std::chrono::milliseconds(int_at(r, i, 1)), bool_at(r, i, 2)});
    return out;
  });
}

std::vector<std::string> postgres_store::release_dead_leases() {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c,
                   "UPDATE schedule s SET owner = NULL, lease_until = NULL WHERE s.owner IS NOT "
                   "NULL AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.owner = s.owner AND "
                   "i.alive_until > now()) RETURNING s.site",
                   "cannot release the leases of instances gone");
    std::vector<std::string> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back(text_at(r, i, 0));
    return out;
  });
}

void postgres_store::heartbeat(std::string_view owner, std::chrono::milliseconds alive_for) {
  auto& d = *impl_;
  d.with_connection([&](PGconn* c) {
    d.run(c,
          "INSERT INTO instances (owner, alive_until) VALUES ($1, now() + $2 * interval "
          "'1 millisecond') ON CONFLICT (owner) DO UPDATE SET alive_until = excluded.alive_until",
          {std::string(owner), std::to_string(alive_for.count())},
          "cannot say this instance is alive");
    // Each start is a new owner (pid and a random tail): rows of instances gone for a day go,
    // so the table stays as small as the cluster.
    d.run(c, "DELETE FROM instances WHERE alive_until < now() - interval '1 day'",
          "cannot forget old instances");
  });
}

void postgres_store::leave(std::string_view owner) {
  auto& d = *impl_;
  d.with_connection([&](PGconn* c) {
    d.run(c, "DELETE FROM instances WHERE owner = $1", {std::string(owner)},
          "cannot say this instance is leaving");
  });
}

bool postgres_store::renew(std::string_view site, std::string_view owner,
                           std::chrono::milliseconds lease) {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c,
                   "UPDATE schedule SET lease_until = now() + $3 * interval '1 millisecond' "
                   "WHERE site = $1 AND owner = $2",
                   {std::string(site), std::string(owner), std::to_string(lease.count())},
                   "cannot renew the lease");
    return std::string_view(PQcmdTuples(r.get())) == "1";
  });
}

void postgres_store::release(std::string_view site, std::string_view owner) {
  auto& d = *impl_;
  d.with_connection([&](PGconn* c) {
    d.run(c, "UPDATE schedule SET owner = NULL, lease_until = NULL WHERE site = $1 AND owner = $2",
          {std::string(site), std::string(owner)}, "cannot release the lease");
  });
}

bool postgres_store::claim_prune(std::string_view owner, std::chrono::milliseconds period) {
  auto& d = *impl_;
  return d.transaction([&](PGconn* c) {
    d.run(c, "INSERT INTO schedule (site) VALUES ($1) ON CONFLICT DO NOTHING", {prune_row},
          "cannot schedule pruning");
    // The next prune is due a period from now whoever prunes; the lease only says who did.
    auto r = d.run(c,
                   "UPDATE schedule SET due_at = now() + $3 * interval '1 millisecond', owner = "
                   "$2, lease_until = now() + $3 * interval '1 millisecond' WHERE site = $1 AND "
                   "site IN (SELECT site FROM schedule WHERE site = $1 AND due_at <= now() FOR "
                   "UPDATE SKIP LOCKED)",
                   {prune_row, std::string(owner), std::to_string(period.count())},
                   "cannot claim pruning");
    return std::string_view(PQcmdTuples(r.get())) == "1";
  });
}

std::vector<store_event> postgres_store::events_after(std::int64_t after, std::size_t limit) {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c, "SELECT seq, site FROM events WHERE seq > $1 ORDER BY seq LIMIT $2",
                   {std::to_string(after), std::to_string(limit)}, "cannot read events");
    std::vector<store_event> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back({int_at(r, i, 0), text_at(r, i, 1)});
    return out;
  });
}

std::int64_t postgres_store::last_event_seq() {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    return int_at(d.run(c, "SELECT last_event FROM newsdesk_meta", "cannot read the last event"), 0,
                  0);
  });
}

} // namespace newsdesk::server
