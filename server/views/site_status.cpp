#include "server/views/site_status.hpp"

#include "server/render/renderers.hpp"
#include "server/views/page_words.hpp"

#include "scrapers/url.hpp"

#include <algorithm>
#include <cctype>

namespace newsdesk::server {

namespace {

std::string renderer_name(std::string_view renderer) {
  const auto* known = find_renderer(renderer);
  return std::string(known ? known->display_name() : renderer);
}

} // namespace

bool renderer_failed(const site_report& s) {
  return !s.ok && !s.error.empty() && s.last_attempt_ms != 0 && info(s.failure).renderer_problem;
}

site_status status_of(const site_report& s, std::int64_t now_ms) {
  site_status out;
  const bool failed = !s.ok && !s.stale && s.last_attempt_ms != 0 && !s.error.empty();
  if (renderer_failed(s)) {
    // Quiet: the chip keeps its colours, dashed, and says it to screen readers only.
    out.state = "renderer";
    out.state_text = "not updating";
    out.quiet = true;
  } else if (s.ok && !s.health.empty()) {
    // It refreshes, but not as it used to: the reader may miss stories, the operator should look
    // (the reason is the chip's title, and in the log).
    out.state = "broken";
    out.state_text = "looks broken";
  } else {
    out.state = s.ok ? "ok" : s.stale ? "stale" : failed ? "failed" : "pending";
    out.state_text = s.ok      ? (s.note.empty() ? "" : "found by detection")
                     : s.stale ? "not updating"
                     : failed  ? "failed"
                               : "loading…";
  }
  if (s.ok || s.error.empty() || s.last_attempt_ms == 0)
    return out;
  const auto words = describe_failure(s.failure);
  if (words.renderer_problem) {
    const auto renderer = renderer_name(s.renderer);
    out.problem = "Couldn’t load " + s.display_name + ": " + words.summary + " (" + renderer +
                  "). Check " + renderer + ": " + words.check;
  } else {
    out.problem = s.stale ? s.display_name + " isn’t updating (last updated " +
                                age_text(s.last_success_ms, now_ms) + "): " + words.summary
                          : "Couldn’t load " + s.display_name + ": " + words.summary;
  }
  return out;
}

failure_words describe_failure(failure_kind kind) {
  const auto& f = info(kind);
  // A site's failure recorded by an older version has no kind: words that fit any failure.
  if (kind == failure_kind::none)
    return {"something went wrong loading it", false, {}};
  return {std::string(f.summary), f.renderer_problem, std::string(f.check)};
}

std::string public_detail(std::string_view error, std::string_view site_url) {
  auto host_of = [](std::string_view url) {
    auto parts = scrapers::url::split_http_url(url);
    return parts ? parts->host : std::string();
  };
  const auto site_host = host_of(site_url);
  std::string out;
  std::size_t at = 0;
  while (at < error.size()) {
    auto start = error.find("://", at);
    if (start == std::string_view::npos)
      break;
    // Back to the scheme's first letter, forward to the end of the address.
    auto begin = start;
    while (begin > at && std::isalpha(static_cast<unsigned char>(error[begin - 1])))
      --begin;
    auto end = start + 3;
    while (end < error.size() && !std::isspace(static_cast<unsigned char>(error[end])) &&
           error[end] != ')' && error[end] != '\'' && error[end] != '"')
      ++end;
    auto address = error.substr(begin, end - begin);
    out.append(error.substr(at, begin - at));
    const auto host = host_of(address);
    out += !host.empty() && host == site_host ? std::string(address) : "(an internal address)";
    at = end;
  }
  out.append(error.substr(at));
  return out;
}

std::vector<site_problem> problems_of(const std::vector<site_report>& sites, std::int64_t now_ms) {
  // The raw error (internal addresses removed) is each notice's detail on demand.
  struct renderer_group {
    std::string renderer; // display name
    failure_words words;
    std::vector<const site_report*> sites;
  };
  std::vector<renderer_group> renderer_groups; // a handful at most: one per renderer and kind
  std::vector<site_problem> own;               // each site's own failure
  for (const auto& s : sites) {
    if (s.ok || s.error.empty() || s.last_attempt_ms == 0)
      continue;
    auto words = describe_failure(s.failure);
    if (words.renderer_problem) {
      auto renderer = renderer_name(s.renderer);
      auto group = std::find_if(renderer_groups.begin(), renderer_groups.end(), [&](auto& g) {
        return g.renderer == renderer && g.words.summary == words.summary;
      });
      if (group == renderer_groups.end())
        group = renderer_groups.insert(renderer_groups.end(),
                                       {std::move(renderer), std::move(words), {}});
      group->sites.push_back(&s);
      continue;
    }
    own.push_back({status_of(s, now_ms).problem,
                   s.name,
                   {public_detail(s.error, s.url) + " (via " + renderer_name(s.renderer) +
                    ", tried " + clock_time(s.last_attempt_ms) + ")"}});
  }
  std::vector<site_problem> out;
  for (const auto& group : renderer_groups) {
    site_problem problem;
    std::vector<std::string> names;
    for (const auto* s : group.sites) {
      names.push_back(s->display_name);
      problem.sites += (problem.sites.empty() ? "" : " ") + s->name;
      problem.details.push_back(s->display_name + ": " + public_detail(s->error, s->url) +
                                " (tried " + clock_time(s->last_attempt_ms) + ")");
    }
    problem.summary = "Couldn’t load " + name_list(names) + ": " + group.words.summary + " (" +
                      group.renderer + "). Check " + group.renderer + ": " + group.words.check;
    out.push_back(std::move(problem));
  }
  out.insert(out.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
  return out;
}

} // namespace newsdesk::server
