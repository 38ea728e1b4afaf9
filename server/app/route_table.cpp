#include "server/app/route_table.hpp"

namespace newsdesk::server {

namespace {

constexpr bool in_id_order() {
  for (std::size_t i = 0; i < route_table.size(); ++i)
    if (static_cast<std::size_t>(route_table[i].id) != i)
      return false;
  return true;
}
// A route_id indexes its row and its handler.
static_assert(in_id_order(), "route_table's rows must follow route_id's order");

constexpr std::size_t index_of(route_id id) {
  return static_cast<std::size_t>(id);
}

constexpr bool is_prefix(const route& r) {
  return r.path.size() > 1 && r.path.back() == '/';
}

bool takes(route_methods methods, std::string_view method) {
  switch (methods) {
  case route_methods::read:
    return method == "GET" || method == "HEAD";
  case route_methods::post:
    return method == "POST";
  }
  return false;
}

} // namespace

const route* find_route(std::string_view path) {
  for (const auto& r : route_table)
    if (is_prefix(r) ? path.starts_with(r.path) : path == r.path)
      return &r;
  return nullptr;
}

std::string_view allow_of(route_methods methods) {
  switch (methods) {
  case route_methods::read:
    return "GET, HEAD";
  case route_methods::post:
    return "POST";
  }
  return "";
}

void router::bind(route_id id, request_handler handler) {
  handlers_[index_of(id)] = std::move(handler);
}

void router::handle(http_request request, responder respond) const {
  const auto* r = find_route(request.path());
  if (!r || !handlers_[index_of(r->id)])
    return respond(text_response(404));
  if (!takes(r->methods, request.method))
    return respond(text_response(405).with_header("Allow", std::string(allow_of(r->methods))));
  handlers_[index_of(r->id)](std::move(request), std::move(respond));
}

} // namespace newsdesk::server
