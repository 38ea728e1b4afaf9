#include "server/render/renderers.hpp"

#include "server/render/browserless_renderer.hpp"
#include "server/render/chromium_renderer.hpp"
#include "server/render/direct_renderer.hpp"
#include "server/render/http_client.hpp"
#include "server/render/splash_renderer.hpp"

#include <set>

namespace newsdesk::server {

namespace {

// The list is checked once, when it is first built: a mistake in it is a programming error
// that every test run would meet, not something an operator could cause.
std::vector<const renderer_descriptor*> checked(std::vector<const renderer_descriptor*> list) {
  std::set<std::string_view> names;
  for (const auto* r : list)
    if (!names.insert(r->name).second)
      throw std::logic_error("two renderers registered as " + std::string(r->name));
  // automatic_renderer() must always find one.
  if (std::none_of(list.begin(), list.end(),
                   [](const auto* r) { return r->automatic && !r->missing; }))
    throw std::logic_error("no automatic renderer is always available");
  return list;
}

} // namespace

const std::vector<const renderer_descriptor*>& registered_renderers() {
  // One line per renderer (an explicit list: self-registration vanishes from static libraries).
  // Order matters: it is the order of preference for the automatic choice and of --help.
  static const std::vector<const renderer_descriptor*> list = checked({
      &splash_descriptor(),
      &chromium_descriptor(),
      &browserless_descriptor(),
      &direct_descriptor(),
      &feed_descriptor(),
  });
  return list;
}

const renderer_descriptor* find_renderer(std::string_view name) {
  for (const auto* r : registered_renderers())
    if (r->name == name)
      return r;
  return nullptr;
}

const renderer_descriptor& automatic_renderer(const renderer_options& options) {
  for (const auto* r : registered_renderers())
    if (r->automatic && r->available(options))
      return *r;
  throw std::logic_error("no automatic renderer is available"); // checked() rules this out
}

std::string renderer_choice_help() {
  std::vector<std::string_view> listed;
  std::string automatic;
  for (const auto* r : registered_renderers()) {
    if (r->listed)
      listed.push_back(r->name);
    if (r->automatic)
      automatic.append(automatic.empty() ? "" : ", else ")
          .append(r->name)
          .append(r->available_when.empty() ? "" : " ")
          .append(r->available_when);
  }
  std::string names;
  for (std::size_t i = 0; i < listed.size(); ++i)
    names.append(i == 0 ? "" : i + 1 == listed.size() ? " or " : ", ").append(listed[i]);
  return "for sites that name none: " + names + "; unset: " + automatic;
}

std::vector<settings::setting> renderer_settings() {
  std::vector<settings::setting> rows;
  for (const auto* r : registered_renderers())
    rows.insert(rows.end(), r->rows.begin(), r->rows.end());
  // Shared by every renderer that fetches over HTTP; direct is the one that meets sites' own
  // certificates, which is what an operator turns this off for.
  rows.push_back(
      settings::field(&renderer_options::tls_verify,
                      {.path = "tls_verify", .help = "direct renderer: check TLS certificates"}));
  return rows;
}

void resolve_renderer_options(renderer_options& options) {
  for (const auto* r : registered_renderers())
    if (r->resolve)
      r->resolve(options);
}

std::string renderer_address(const renderer_options& options, std::string_view name) {
  const auto* r = find_renderer(name);
  return r ? r->address(options) : std::string();
}

renderer_options::renderer_options() {
  for (const auto* r : registered_renderers())
    parts_.push_back(r->options);
}

renderer_set::renderer_set(boost::asio::io_context& ioc, const renderer_options& options)
    : client_(std::make_unique<http_client>(ioc, tls_options{options.tls_verify, {}})) {
  const renderer_context context{ioc, *client_};
  for (const auto* r : registered_renderers())
    if (r->available(options))
      renderers_.emplace(std::string(r->name), r->make(context, options));
}

renderer_set::~renderer_set() = default;

renderer* renderer_set::find(std::string_view name) const {
  auto it = renderers_.find(name);
  return it == renderers_.end() ? nullptr : it->second.get();
}

std::map<std::string, renderer*> renderer_set::by_name() const {
  std::map<std::string, renderer*> out;
  for (const auto& [name, r] : renderers_)
    out.emplace(name, r.get());
  return out;
}

void renderer_set::shutdown() {
  for (auto& [name, r] : renderers_)
    r->shutdown();
}

} // namespace newsdesk::server
