#include "server/render/renderers.hpp"

#include "server/render/browserless_renderer.hpp"
#include "server/render/chromium_renderer.hpp"
#include "server/render/direct_renderer.hpp"
#include "server/render/http_client.hpp"
#include "server/render/splash_renderer.hpp"

namespace newsdesk::server {

namespace {

struct render_context {
  boost::asio::io_context& ioc;
  http_client& client;
  const renderer_options& options;
};

// One line per renderer: its name and how it is made, or null when its options leave it off.
using maker = std::unique_ptr<renderer> (*)(const render_context&);
const std::pair<std::string_view, maker> registrations[] = {
    {"direct",
     [](const render_context& c) -> std::unique_ptr<renderer> {
       return std::make_unique<direct_renderer>(c.client);
     }},
    {"feed",
     [](const render_context& c) -> std::unique_ptr<renderer> {
       return std::make_unique<direct_renderer>(c.client, direct_renderer::mode::feed);
     }},
    {"splash",
     [](const render_context& c) -> std::unique_ptr<renderer> {
       if (c.options.splash_url.empty())
         return nullptr;
       return std::make_unique<splash_renderer>(c.client, c.options.splash_url);
     }},
    {"chromium",
     [](const render_context& c) -> std::unique_ptr<renderer> {
       if (c.options.chromium.path.empty())
         return nullptr;
       return std::make_unique<chromium_renderer>(c.ioc, c.options.chromium);
     }},
    {"browserless",
     [](const render_context& c) -> std::unique_ptr<renderer> {
       if (c.options.browserless_url.empty())
         return nullptr;
       return std::make_unique<browserless_renderer>(c.ioc, c.options.browserless_url);
     }},
};

} // namespace

renderer_set::renderer_set(boost::asio::io_context& ioc, const renderer_options& options)
    : client_(std::make_unique<http_client>(ioc, tls_options{options.tls_verify, {}})) {
  const render_context context{ioc, *client_, options};
  for (const auto& [name, make] : registrations)
    if (auto made = make(context))
      renderers_.emplace(std::string(name), std::move(made));
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
