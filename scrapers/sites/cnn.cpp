// CNN (edition.cnn.com / www.cnn.com).
//
// A headline is a link to a cnn.com page that contains CNN's headline-text element; the title
// is that element's text, so kickers, timestamps and image captions inside the link are left
// out. The element's class changed over the years:
//   2015-2021  h3.cd__headline > a[href] > span.cd__headline-text
//   2022-      a.container__link[href] ... span.container__headline-text
// hrefs are usually relative ("/2025/04/15/europe/.../index.html") but absolute ones to any
// cnn.com host, or to CNN's link shortener cnn.it (used for promoted items), are accepted too.
// Video pages ("/videos/....cnn") count: they are headlines on the page. The raw (unrendered) page
// since about 2018 has no headline markup at all, as the headlines are filled in by JavaScript,
// hence the Splash renderer.
#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/scraper.hpp"
#include "scrapers/titles.hpp"
#include "scrapers/url.hpp"

#include <memory>

namespace newsdesk::scrapers::sites {
namespace {

dom::node headline_text_in(dom::node link) {
  for (dom::node n : link.descendant_elements()) {
    if (n.has_class("container__headline-text") || n.has_class("cd__headline-text")) {
      return n;
    }
  }
  return {};
}

// The title of the package a card belongs to (2025: the lead package's h2,
// .container__title_url-text), for a card whose headline text is the package's summary: the
// first card of CNN's lead package gives "China's export restrictions on seven types of rare
// earth minerals is bad news... And Trump has little room to retaliate in kind." where the
// package says "Xi's powerful card in fight against Trump's trade war", linking the same story.
dom::node package_title_of(dom::node link) {
  int levels = 0;
  for (dom::node up = link.parent(); up && levels < 12; up = up.parent(), ++levels) {
    if (!up.has_class("container"))
      continue;
    for (dom::node n : up.descendant_elements())
      if (n.has_class("container__title_url-text"))
        return n;
    return {}; // the card's own container has no title
  }
  return {};
}

struct candidate {
  dom::node link;
  dom::node title;
  std::string_view href;
};

class cnn_scraper final : public scraper {
 public:
  const site_info& site() const override { return info_; }

  std::vector<headline> extract(const dom::document& page,
                                std::string_view page_url) const override {
    headline_collector collector(info_.name, page_url, page);
    std::vector<candidate> stories;
    std::vector<candidate> trending_labels;
    for (dom::node link : page.root().descendant_elements()) {
      if (!link.has_tag("a")) {
        continue;
      }
      std::optional<std::string_view> href = link.attr("href");
      if (!href) {
        continue;
      }
      dom::node text = headline_text_in(link);
      if (!text) {
        continue;
      }
      if (looks_like_summary(normalise_title_text(text.text()))) {
        text = package_title_of(link);
        if (!text) {
          continue;
        }
      }
      std::optional<std::string> target = collector.resolve(*href);
      if (!target) {
        continue;
      }
      std::optional<url::http_parts> parts = url::split_http_url(*target);
      if (!parts ||
          !(url::host_within(parts->host, "cnn.com") || url::host_within(parts->host, "cnn.it"))) {
        continue;
      }
      // The "ribbon" at the top of the 2025 page is a trending bar: short topic labels
      // ("Trump's tariffs") rather than headlines, most of them linking to stories the page
      // also lists with their full headline further down. They are added after every other
      // link, so a story keeps its full headline wherever it has one, and a trending story
      // the page shows nowhere else still appears, under its label (the only title there is).
      auto& bucket = link.has_class("container_ribbon__link") ? trending_labels : stories;
      bucket.push_back({link, text, *href});
    }
    for (const auto* bucket : {&stories, &trending_labels}) {
      for (const candidate& c : *bucket) {
        collector.add_link(c.link, c.href, c.title);
      }
    }
    return collector.take();
  }

 private:
  site_info info_{
      .name = "cnn",
      .display_name = "CNN",
      .url = "https://edition.cnn.com/",
      .colour = "#cc0000",
      .wait_seconds = std::nullopt,
      .timeout_seconds = std::nullopt,
      // The served HTML has no headlines (they are inserted by scripts), so the page must be
      // rendered whatever the service-wide default renderer is.
      .renderer = "splash",
  };
};

} // namespace

std::unique_ptr<scraper> make_cnn() {
  return std::make_unique<cnn_scraper>();
}

} // namespace newsdesk::scrapers::sites
