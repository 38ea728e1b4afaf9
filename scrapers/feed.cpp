#include "scrapers/feed.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/feed_encoding.hpp"
#include "scrapers/feed_xml.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/html_entities.hpp"
#include "scrapers/text.hpp"
#include "scrapers/titles.hpp"
#include "scrapers/url.hpp"

#include <libxml/tree.h>
#include <openssl/evp.h>

#include <limits>
#include <memory>
#include <optional>

namespace newsdesk::scrapers {

namespace {

using detail::view;

struct xml_free {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
  void operator()(xmlChar* s) const { xmlFree(s); }
};
using doc_ptr = std::unique_ptr<xmlDoc, xml_free>;

// The namespaces of the feed formats' own elements. Atom 0.3 and Atom 1.0 differ in little
// that a headline needs: both are read as Atom.
constexpr std::string_view atom_ns = "http://www.w3.org/2005/Atom";
constexpr std::string_view atom03_ns = "http://purl.org/atom/ns#";
constexpr std::string_view rss10_ns = "http://purl.org/rss/1.0/";
constexpr std::string_view rss090_ns = "http://my.netscape.com/rdf/simple/0.9/";
constexpr std::string_view dublin_core_ns = "http://purl.org/dc/elements/1.1/";
// Media RSS (media:content, media:thumbnail, media:group): the pictures feeds give their items.
constexpr std::string_view media_rss_ns = "http://search.yahoo.com/mrss/";

// Element and attribute names are compared as feed readers compare them, ASCII case aside:
// <RSS>, <CHANNEL> and <Title> are what some generators write.
bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z')
      x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z')
      y = static_cast<char>(y - 'A' + 'a');
    if (x != y)
      return false;
  }
  return true;
}

std::string_view ns_of(const xmlNode* n) {
  return n->ns ? view(n->ns->href) : std::string_view();
}

bool named(const xmlNode* n, std::string_view name) {
  return n && n->type == XML_ELEMENT_NODE && same_name(view(n->name), name);
}

// The attribute `name` of `n` in any namespace (rdf:about is "about"), entity references
// resolved; empty when absent.
std::string attribute(const xmlNode* n, std::string_view name) {
  for (const xmlAttr* a = n->properties; a; a = a->next)
    if (same_name(view(a->name), name)) {
      std::unique_ptr<xmlChar, xml_free> value(
          xmlNodeGetContent(reinterpret_cast<const xmlNode*>(a)));
      return std::string(view(value.get()));
    }
  return {};
}

std::string text_of(const xmlNode* n) {
  if (!n)
    return {};
  std::unique_ptr<xmlChar, xml_free> content(xmlNodeGetContent(n));
  return std::string(view(content.get()));
}

std::string lower(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return text;
}

// How much a child element named like one the feed needs is the feed's own: a format's own
// namespace (or none, or the root element's: RSS 2.0 written in a namespace of its own) first,
// then Dublin Core's (dc:title), then any other (media:title).
int rank_of(const xmlNode* n) {
  const auto ns = ns_of(n);
  if (ns.empty() || ns == atom_ns || ns == atom03_ns || ns == rss10_ns || ns == rss090_ns)
    return 0;
  if (const xmlNode* root = xmlDocGetRootElement(n->doc); root && ns == ns_of(root))
    return 0;
  return ns == dublin_core_ns ? 1 : 2;
}

// The best-ranked child element named `name`, the first of its rank.
const xmlNode* child(const xmlNode* parent, std::string_view name) {
  const xmlNode* best = nullptr;
  for (const xmlNode* c = parent->children; c; c = c->next)
    if (named(c, name) && (!best || rank_of(c) < rank_of(best)))
      best = c;
  return best;
}

// The base an element's relative links resolve against: xml:base on it and its ancestors,
// over the document's URL (libxml2 combines them).
std::string base_of(const xmlNode* n) {
  std::unique_ptr<xmlChar, xml_free> base(xmlNodeGetBase(n->doc, n));
  return std::string(view(base.get()));
}

std::string resolved(const xmlNode* n, std::string_view href) {
  href = trim_ascii_whitespace(href);
  if (href.empty())
    return {};
  auto absolute = url::resolve(base_of(n), href);
  return absolute ? *absolute : std::string();
}

// Text that is HTML markup, as text ("<b>Bold</b> &amp; more" -> "Bold & more"): what a page's
// title would read. Scripts and style sheets are not text.
std::string html_text(std::string_view markup) {
  const auto document = dom::document::parse(markup);
  collapsed_text out;
  for (dom::node n : document.root().descendants()) {
    if (!n.is_text())
      continue;
    bool shown = true;
    for (auto up = n.parent(); up && shown; up = up.parent())
      shown = !up.has_tag("script") && !up.has_tag("style") && !up.has_tag("template");
    if (shown)
      out.append(n.raw_text());
  }
  return std::move(out).take();
}

// Whether an RSS title's text is HTML: RSS does not say, and feeds write both "AT&amp;T" (the
// text AT&T) and "AT&amp;amp;T" (markup for it). As readers have long judged: text with an
// end tag ("</b>") or a character reference that HTML resolves ("&amp;", "&#8217;") is markup.
bool looks_like_html(std::string_view text) {
  for (std::size_t at = text.find_first_of("<&"); at != std::string_view::npos;
       at = text.find_first_of("<&", at + 1)) {
    const auto rest = text.substr(at);
    if (rest.starts_with("</")) {
      std::size_t i = 2;
      while (i < rest.size() &&
             ((rest[i] >= 'a' && rest[i] <= 'z') || (rest[i] >= 'A' && rest[i] <= 'Z') ||
              (i > 2 && rest[i] >= '0' && rest[i] <= '9')))
        ++i;
      if (i > 2 && i < rest.size() && rest[i] == '>')
        return true;
    } else if (rest.starts_with("&")) {
      const auto end = rest.find(';');
      if (end == std::string_view::npos || end < 2)
        continue;
      const auto name = rest.substr(1, end - 1);
      if (name.starts_with('#')) {
        const bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
        const auto digits = name.substr(hex ? 2 : 1);
        if (!digits.empty() &&
            digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") ==
                std::string_view::npos)
          return true;
      } else if (html_named_reference(name)) {
        return true;
      }
    }
  }
  return false;
}

// The bytes a base64 text stands for (white space between its lines allowed); nullopt when it
// is not base64. OpenSSL's decoder, which the server links for TLS anyway.
std::optional<std::string> base64_decoded(std::string_view text) {
  text = trim_ascii_whitespace(text);
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    return std::nullopt;
  std::unique_ptr<EVP_ENCODE_CTX, decltype(&EVP_ENCODE_CTX_free)> ctx(EVP_ENCODE_CTX_new(),
                                                                      EVP_ENCODE_CTX_free);
  if (!ctx)
    return std::nullopt;
  // Three bytes for every four characters, and a block of slack the decoder may write ahead.
  std::string out(text.size() / 4 * 3 + 80, '\0');
  auto* to = reinterpret_cast<unsigned char*>(out.data());
  int written = 0, last = 0;
  EVP_DecodeInit(ctx.get());
  if (EVP_DecodeUpdate(ctx.get(), to, &written, reinterpret_cast<const unsigned char*>(text.data()),
                       static_cast<int>(text.size())) < 0 ||
      EVP_DecodeFinal(ctx.get(), to + written, &last) != 1)
    return std::nullopt;
  out.resize(static_cast<std::size_t>(written + last));
  return out;
}

enum class format { rss, rdf, atom };

} // namespace

namespace {

// A feed read as a stream: each item (or entry) is read as soon as it is complete and freed
// before the next is parsed, so a feed of 200,000 items never holds more than a chunk of them,
// and reading stops once the site's page is full. Throws feed_error.
struct feed_reader {
  headline_collector& collector;
  bool read_as_utf8; // the document's encoding: titles decoded twice are undone (finish_title)
  feed out;
  const detail::xml_stream* stream = nullptr;
  std::optional<format> kind;
  std::size_t items = 0;
  bool saw_channel = false;
  int title_rank = 2; // of the feed's title so far: only a better-ranked one replaces it

  // Once a site's page is full, the items after are never read; far more items than any feed
  // has (repeated or linkless) bound a hostile one's cost.
  bool more() const {
    return collector.size() < max_headlines_per_site && items < 10 * max_headlines_per_site;
  }

  static format format_of(const xmlNode* root) {
    const auto name = view(root->name);
    const auto ns = ns_of(root);
    if (same_name(name, "rss") || same_name(name, "channel")) // RSS 0.9x, 2.0; <channel> alone
      return format::rss;
    if (same_name(name, "rdf")) // RSS 0.90 and 1.0
      return format::rdf;
    if (same_name(name, "feed") && (ns.empty() || ns == atom_ns || ns == atom03_ns))
      return format::atom;
    throw feed_error("not a feed: the root element is <" + std::string(name) +
                     "> (expected <rss>, <rdf:RDF> or Atom's <feed>)");
  }

  // A title as a reader sees it: markup reduced to its text as a page's title is, C1 control
  // characters read as the windows-1252 punctuation they stand for (&#146; is "’" to every
  // browser), and UTF-8 that was decoded twice ("CafÃ©") undone.
  std::string finish_title(std::string text) const {
    text = c1_as_windows_1252(text);
    if (read_as_utf8)
      if (auto once = undo_double_utf8(text))
        text = std::move(*once);
    return text;
  }

  // An Atom text construct: type="html" (Atom 0.3: "text/html", mode="escaped") holds escaped
  // markup; "xhtml" (and 0.3's mode="xml") real elements, whose text is the title; else text.
  // Atom 0.3's mode="base64" holds the bytes of its type's text (UTF-8, as the document is now).
  std::string atom_title(const xmlNode* n) const {
    if (!n)
      return {};
    const auto type = lower(attribute(n, "type"));
    const auto mode = lower(attribute(n, "mode"));
    auto text = text_of(n);
    if (mode == "base64")
      if (auto bytes = base64_decoded(text))
        text = std::move(*bytes);
    const bool escaped_markup = (type == "html" || type.ends_with("/html")) && mode != "xml";
    return finish_title(escaped_markup ? html_text(text) : std::move(text));
  }

  std::string rss_title(const xmlNode* n) const {
    auto text = text_of(n);
    return finish_title(looks_like_html(text) ? html_text(text) : std::move(text));
  }

  std::string title_text(const xmlNode* title) const {
    if (!title)
      return {};
    return *kind == format::atom ? atom_title(title) : rss_title(title);
  }

  // An Atom link to a page for people: rel="alternate" (the default) of an HTML type (the
  // default; "html" and "xhtml" as Atom's text constructs name them), so that an enclosure or
  // an edit link is never taken for the page.
  static bool atom_page_link(const xmlNode* link) {
    const auto rel = lower(std::string(trim_ascii_whitespace(attribute(link, "rel"))));
    const auto type = lower(std::string(trim_ascii_whitespace(attribute(link, "type"))));
    return (rel.empty() || rel == "alternate") &&
           (type.empty() || type == "text/html" || type == "application/xhtml+xml" ||
            type == "html" || type == "xhtml");
  }

  // Where one <link> element points: Atom's (and an atom:link's in RSS) href when it is a page
  // link, RSS's text; empty otherwise. An Atom link written as RSS's, its address as its text,
  // is read as one (its rel and type still judged).
  std::string page_link(const xmlNode* link) const {
    if (rank_of(link) > 0)
      return {};
    auto href = attribute(link, "href");
    const bool atom_link = !href.empty() || *kind == format::atom;
    if (href.empty())
      href = text_of(link);
    return !atom_link || atom_page_link(link) ? resolved(link, href) : std::string();
  }

  // An entry's link to its page: its first page link; else CDF's href attribute, a <guid> that
  // is a permalink (RSS's default), and an id (Atom's <id>, RSS 1.0's rdf:about) that is itself
  // an http(s) URL.
  std::string entry_link(const xmlNode* entry) const {
    for (const xmlNode* c = entry->children; c; c = c->next)
      if (named(c, "link"))
        if (auto link = page_link(c); !link.empty())
          return link;
    if (*kind != format::atom)
      if (auto link = resolved(entry, attribute(entry, "href")); !link.empty())
        return link;
    if (const auto* guid = child(entry, "guid");
        guid && !same_name(trim_ascii_whitespace(attribute(guid, "isPermaLink")), "false"))
      if (auto link = resolved(guid, text_of(guid)); !link.empty())
        return link;
    std::string id = *kind == format::atom ? text_of(child(entry, "id")) : std::string();
    if (id.empty())
      id = attribute(entry, "about");
    id = std::string(trim_ascii_whitespace(id));
    return url::is_http_url(id) ? id : std::string();
  }

  // An item's publication date: the first of its date elements that reads as a plausible one.
  std::optional<std::int64_t> published(const xmlNode* item) const {
    for (const char* name : {"published", "pubDate", "issued", "date", "updated", "modified"})
      for (const xmlNode* c = item->children; c; c = c->next)
        if (named(c, name))
          if (auto t = plausible_date(text_of(c), collector.now_ms()))
            return t;
    return std::nullopt;
  }

  // An item's picture: Media RSS's content of an image type or medium (in a media:group too),
  // else its thumbnail, else an RSS <enclosure> or an Atom link rel="enclosure" of an image type;
  // empty when none.
  std::string item_image(const xmlNode* entry) const {
    auto image_type = [](const xmlNode* n) {
      return lower(std::string(trim_ascii_whitespace(attribute(n, "type")))).starts_with("image/");
    };
    std::string content, thumbnail, enclosure;
    auto look = [&](const xmlNode* parent, auto& self, int depth) -> void {
      for (const xmlNode* c = parent->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
          continue;
        const bool media = ns_of(c) == media_rss_ns;
        if (media && named(c, "group") && depth == 0) {
          self(c, self, 1);
        } else if (media && named(c, "content") && content.empty()) {
          const auto medium = lower(attribute(c, "medium"));
          if (medium == "image" || image_type(c))
            content = resolved(c, attribute(c, "url"));
        } else if (media && named(c, "thumbnail") && thumbnail.empty()) {
          thumbnail = resolved(c, attribute(c, "url"));
        } else if (!media && rank_of(c) == 0 && enclosure.empty() && image_type(c)) {
          if (named(c, "enclosure"))
            enclosure = resolved(c, attribute(c, "url"));
          else if (named(c, "link") &&
                   lower(std::string(trim_ascii_whitespace(attribute(c, "rel")))) == "enclosure")
            enclosure = resolved(c, attribute(c, "href"));
        }
      }
    };
    look(entry, look, 0);
    for (auto* found : {&content, &thumbnail, &enclosure})
      if (url::is_http_url(*found))
        return std::move(*found);
    return {};
  }

  void add_entry(const xmlNode* entry) {
    ++items;
    if (auto link = entry_link(entry); !link.empty())
      if (collector.add(title_text(child(entry, "title")), link, published(entry))) {
        // Atom's <summary> is a text construct as its title is; RSS's <description> is text or
        // escaped markup as its title is. Full content (<content>, content:encoded) is the
        // article, not a line under its title.
        collector.summarise_last(
            title_text(child(entry, *kind == format::atom ? "summary" : "description")));
        collector.illustrate_last(item_image(entry));
      }
    // An item left open ("<item>...<item>...</item>") holds the next: both are items.
    for (const xmlNode* c = entry->children; c && more(); c = c->next)
      if (named(c, "item") || named(c, "entry"))
        add_entry(c);
  }

  // The feed's own title and link: the first of each in the format's namespace (for the title,
  // else Dublin Core's).
  void take_feed_detail(const xmlNode* n) {
    const int rank = rank_of(n);
    if (named(n, "title") && rank < title_rank) {
      if (auto title = normalise_title_text(title_text(n)); !title.empty()) {
        out.title = std::move(title);
        title_rank = rank;
      }
    } else if (named(n, "language") && out.language.empty()) { // RSS's, or dc:language
      out.language = collapse_whitespace(text_of(n)).substr(0, max_language_bytes);
    } else if (named(n, "link") && out.home.empty()) {
      out.home = page_link(n);
    }
  }

  // One complete element under the root or the channel.
  void take(const xmlNode* n, const xmlNode* parent) {
    if (named(n, "item") || named(n, "entry")) {
      add_entry(n);
    } else if (*kind == format::rdf && named(n, "channel")) {
      saw_channel = true;
      for (const xmlNode* c = n->children; c; c = c->next)
        take_feed_detail(c);
    } else if (*kind == format::atom || named(parent, "channel")) {
      take_feed_detail(n);
    }
  }

  // Frees the descendants of `n` that were still open when the text ended: they are its last
  // child, that one's last child, and so on (an element still open holds what came after it).
  void drop_open_descendants(xmlNode* n) const {
    while (n) {
      xmlNode* last = n->last;
      while (last && last->type != XML_ELEMENT_NODE)
        last = last->prev;
      if (last && stream->open_at_end(last)) {
        xmlUnlinkNode(last);
        xmlFreeNode(last);
        return;
      }
      n = last;
    }
  }

  // Reads and frees the complete children of `parent` (all of them when `complete`): items,
  // and the feed's title and link. An RSS channel under the root is a container whose
  // children are read as they complete.
  void read_children(xmlNode* parent, bool complete, bool at_root) {
    xmlNode* c = parent->children;
    while (c && more()) {
      xmlNode* next = c->next;
      const bool done = complete || next;
      if (at_root && *kind == format::rss && named(c, "channel")) {
        saw_channel = true;
        read_children(c, done, false);
      } else if (done) {
        // What a cut-off feed left open is not read: its link may be cut too. An item cut off
        // after its link closed is read without the part that was cut.
        const bool cut = complete && stream->open_at_end(c);
        if (cut && (named(c, "item") || named(c, "entry")))
          drop_open_descendants(c);
        if (c->type == XML_ELEMENT_NODE && (!cut || named(c, "item") || named(c, "entry")))
          take(c, parent);
        xmlUnlinkNode(c);
        xmlFreeNode(c);
      } else {
        break;
      }
      c = next;
    }
  }

  void read(detail::xml_stream& text) {
    stream = &text;
    while (more()) {
      text.parse_next();
      if (text.declares_entities())
        throw feed_error("the feed declares its own entities, which newsdesk does not expand");
      xmlDoc* doc = text.document();
      if (xmlNode* root = doc ? xmlDocGetRootElement(doc) : nullptr) {
        if (!kind)
          kind = format_of(root);
        // <channel> as the root (without <rss>) holds the items itself.
        const bool channel_root = *kind == format::rss && named(root, "channel");
        saw_channel = saw_channel || channel_root;
        read_children(root, text.finished(), !channel_root);
      }
      if (text.finished())
        break;
    }
  }
};

} // namespace

feed parse_feed(std::string_view bytes, std::string_view feed_url, std::string_view site,
                std::string_view content_type) {
  if (bytes.size() > max_feed_bytes)
    throw feed_error("the feed is larger than " + std::to_string(max_feed_bytes / (1024 * 1024)) +
                     " MiB");
  if (bytes.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw feed_error("the feed is empty");
  const auto decoded = decode_xml(bytes, content_type);
  // The collector applies the shared title and URL rules; links arrive already absolute.
  static const dom::document no_page = dom::document::parse("");
  headline_collector collector(std::string(site), feed_url, no_page);
  collector.authored_titles();
  feed_reader reader{collector, decoded.encoding == "UTF-8", {}, nullptr, std::nullopt, 0, false};
  detail::xml_stream stream(decoded.text, std::string(feed_url));
  reader.read(stream);
  const auto* error = stream.first_error();
  if (!reader.kind)
    throw feed_error(error ? detail::describe(error) : "not a feed: no root element");
  // A feed that is not well-formed XML is read as far as libxml2 recovers it; when that finds
  // no headline, what was wrong is the error.
  if (error && collector.size() == 0)
    throw feed_error(detail::describe(error));
  if (*reader.kind == format::rss && !reader.saw_channel && reader.items == 0)
    throw feed_error("not a feed: <rss> has no <channel>");
  reader.out.headlines = collector.take();
  reader.out.encoding = decoded.encoding;
  if (error)
    reader.out.warning =
        "not well-formed XML (" + detail::describe(error) + "); read what it could";
  else if (!decoded.mismatch.empty())
    reader.out.warning = decoded.mismatch;
  return std::move(reader.out);
}

std::vector<opml_outline> parse_opml(std::string_view bytes) {
  if (bytes.size() > max_feed_bytes)
    throw feed_error("the OPML list is larger than " +
                     std::to_string(max_feed_bytes / (1024 * 1024)) + " MiB");
  if (bytes.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw feed_error("the OPML list is empty");
  detail::xml_stream stream(decode_xml(bytes).text, {});
  while (!stream.finished())
    stream.parse_next();
  if (stream.declares_entities())
    throw feed_error("the OPML list declares its own entities, which newsdesk does not expand");
  // A list is read whole or not at all: a recovered half would import the wrong feeds.
  if (const auto* error = stream.first_error())
    throw feed_error(detail::describe(error));
  const xmlNode* root = stream.document() ? xmlDocGetRootElement(stream.document()) : nullptr;
  if (!named(root, "opml"))
    throw feed_error("not an OPML list: the root element is <" +
                     std::string(root ? view(root->name) : "") + ">");
  const xmlNode* body = child(root, "body");
  if (!body)
    throw feed_error("not an OPML list: <opml> has no <body>");
  // Outlines nest (folders of feeds): walked without recursion, in document order.
  std::vector<opml_outline> out;
  const xmlNode* n = body->children;
  while (n && n != body) {
    if (named(n, "outline")) {
      opml_outline o{attribute(n, "title"), attribute(n, "xmlUrl"), attribute(n, "htmlUrl")};
      if (o.title.empty())
        o.title = attribute(n, "text");
      o.title = collapse_whitespace(o.title);
      if (!o.feed_url.empty())
        out.push_back(std::move(o));
      if (n->children) {
        n = n->children;
        continue;
      }
    }
    while (n != body && !n->next)
      n = n->parent;
    if (n != body)
      n = n->next;
  }
  return out;
}

std::string write_opml(std::string_view title, const std::vector<opml_outline>& outlines) {
  doc_ptr doc(xmlNewDoc(reinterpret_cast<const xmlChar*>("1.0")));
  auto x = [](const std::string& s) { return reinterpret_cast<const xmlChar*>(s.c_str()); };
  xmlNode* root = xmlNewNode(nullptr, x("opml"));
  xmlDocSetRootElement(doc.get(), root);
  xmlNewProp(root, x("version"), x("2.0"));
  xmlNode* head = xmlNewChild(root, nullptr, x("head"), nullptr);
  const std::string t(title); // libxml2 wants NUL-terminated strings
  // xmlNewTextChild escapes its content; xmlNewProp escapes attribute values.
  xmlNewTextChild(head, nullptr, x("title"), x(t));
  xmlNode* body = xmlNewChild(root, nullptr, x("body"), nullptr);
  for (const auto& o : outlines) {
    xmlNode* outline = xmlNewChild(body, nullptr, x("outline"), nullptr);
    xmlNewProp(outline, x("type"), x("rss"));
    xmlNewProp(outline, x("text"), x(o.title));
    xmlNewProp(outline, x("title"), x(o.title));
    xmlNewProp(outline, x("xmlUrl"), x(o.feed_url));
    if (!o.home_url.empty())
      xmlNewProp(outline, x("htmlUrl"), x(o.home_url));
  }
  xmlChar* bytes = nullptr;
  int size = 0;
  xmlDocDumpFormatMemoryEnc(doc.get(), &bytes, &size, "UTF-8", 1);
  std::unique_ptr<xmlChar, xml_free> owned(bytes);
  return std::string(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(size));
}

} // namespace newsdesk::scrapers
