#include "server/news/headline.hpp"

#include "server/core/utc_time.hpp"

#include <nlohmann/json.hpp>

namespace newsdesk::server {

std::string iso8601(std::chrono::system_clock::time_point t) {
  return format_utc(std::chrono::floor<std::chrono::milliseconds>(t).time_since_epoch().count(),
                    rfc3339_seconds);
}

std::string iso8601_ms(std::int64_t unix_ms) {
  return format_utc(unix_ms, rfc3339_millis);
}

void to_json(nlohmann::json& j, const picture_ref& picture) {
  if (picture.name.empty())
    j = nullptr;
  else
    j = {{"name", picture.name}, {"width", picture.width}, {"height", picture.height}};
}

void to_json(nlohmann::json& j, const news_item& item) {
  j = {{"id", item.id},
       {"title", item.headline.title},
       {"url", item.headline.url},
       {"site", item.headline.site},
       {"first_seen", iso8601_ms(item.first_seen_ms)},
       {"page_time", iso8601_ms(page_time(item))},
       {"rank", item.rank},
       {"new", item.is_new},
       {"story", item.story}};
  if (item.first_look)
    j["first_look"] = true;
  if (!item.headline.summary.empty())
    j["summary"] = item.headline.summary;
  if (!item.picture.name.empty())
    j["picture"] = item.picture;
  if (item.headline.published_ms)
    j["published"] = iso8601(std::chrono::system_clock::time_point(
        std::chrono::milliseconds(*item.headline.published_ms)));
}

void to_json(nlohmann::json& j, const headline_list& items) {
  j = nlohmann::json::array();
  for (const auto& item : items)
    j.push_back(item);
}

std::shared_ptr<const headline_list::run>
headline_list::sorted_run(std::shared_ptr<const site_items> items) {
  auto r = std::make_shared<run>();
  r->order.reserve(items->size());
  for (const auto& item : *items) {
    r->order.push_back(&item);
    r->last_id = std::max(r->last_id, item.id);
  }
  std::stable_sort(r->order.begin(), r->order.end(),
                   [](const news_item* a, const news_item* b) { return newer_first(*a, *b); });
  r->items = std::move(items);
  return r;
}

headline_list headline_list::merged(std::vector<std::shared_ptr<const run>> runs) {
  headline_list out;
  out.merge_ = std::make_shared<pending>();
  std::erase_if(runs, [](const auto& r) { return r->order.empty(); });
  for (const auto& r : runs)
    out.merge_->size += r->order.size();
  out.merge_->runs = std::move(runs);
  return out;
}

void headline_list::pending::walk(const std::function<bool(const news_item*)>& visit) const {
  // A heap of each run's next headline, the newest on top (newer_first is a total order: ids
  // break ties, so the merge is the order one sort of everything gives).
  struct head {
    const news_item* const* at;
    const news_item* const* end;
  };
  auto later = [](const head& a, const head& b) { return newer_first(**b.at, **a.at); };
  std::vector<head> heap;
  heap.reserve(runs.size());
  for (const auto& r : runs)
    heap.push_back({r->order.data(), r->order.data() + r->order.size()});
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    auto& next = heap.back();
    if (!visit(*next.at))
      return;
    if (++next.at == next.end)
      heap.pop_back();
    else
      std::push_heap(heap.begin(), heap.end(), later);
  }
}

const std::vector<const news_item*>& headline_list::items() const {
  if (!merge_)
    return items_;
  std::call_once(merge_->once, [m = merge_.get()] {
    m->items.reserve(m->size);
    m->walk([m](const news_item* item) {
      m->items.push_back(item);
      return true;
    });
    m->whole = true;
  });
  return merge_->items;
}

std::vector<std::shared_ptr<const void>> headline_list::owners() const {
  if (!merge_)
    return owners_;
  return {merge_->runs.begin(), merge_->runs.end()};
}

void headline_list::flatten() {
  if (!merge_)
    return;
  auto items = this->items();
  auto owners = this->owners();
  merge_.reset();
  items_ = std::move(items);
  owners_ = std::move(owners);
}

std::string headline_json(const news_item& item) {
  return nlohmann::json(item).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string story_update_json(std::int64_t story, std::string_view headline, std::size_t sources) {
  // The keys in the order nlohmann writes an object's (sorted), as every other JSON of ours.
  std::string out = R"({"headline":)";
  out.append(headline).append(R"(,"sources":)").append(std::to_string(sources));
  return out.append(R"(,"story":)").append(std::to_string(story)).append("}");
}

std::string headlines_json(const std::vector<news_item>& items) {
  return nlohmann::json(items).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace newsdesk::server
