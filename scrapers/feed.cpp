#include "scrapers/feed.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/url.hpp"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <memory>
#include <optional>

namespace newsdesk::scrapers {

namespace {

// What a reader sees of an XML name or text: libxml2 speaks unsigned char.
std::string_view view(const xmlChar* text) {
  return text ? std::string_view(reinterpret_cast<const char*>(text)) : std::string_view();
}

struct xml_free {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
  void operator()(xmlParserCtxt* c) const { xmlFreeParserCtxt(c); }
  void operator()(xmlChar* s) const { xmlFree(s); }
};
using doc_ptr = std::unique_ptr<xmlDoc, xml_free>;

constexpr std::string_view atom_ns = "http://www.w3.org/2005/Atom";
constexpr std::string_view rdf_ns = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";

// An XML declaration that names an encoding: then libxml2 must follow it, whatever the bytes
// look like. Only the first line can hold one.
bool declares_encoding(std::string_view bytes) {
  if (bytes.starts_with("\xEF\xBB\xBF"))
    bytes.remove_prefix(3);
  if (!bytes.starts_with("<?xml"))
    return false;
  auto end = bytes.find("?>");
  return end != std::string_view::npos &&
         bytes.substr(0, end).find("encoding") != std::string_view::npos;
}

bool valid_utf8(std::string_view bytes) {
  // libxml2's own check reads up to a NUL; a NUL byte is invalid in XML anyway.
  if (bytes.find('\0') != std::string_view::npos)
    return false;
  const std::string copy(bytes);
  return xmlCheckUTF8(reinterpret_cast<const xmlChar*>(copy.c_str())) != 0;
}

std::string describe(const xmlError* error) {
  if (!error || !error->message)
    return "not well-formed XML";
  std::string message = error->message;
  while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
    message.pop_back();
  return error->line > 0 ? "line " + std::to_string(error->line) + ": " + message : message;
}

// Parses `bytes` as XML, without network access, DTD loading or entity substitution (so no
// external entity is ever read, and internal ones are refused below). A feed that only uses
// HTML's named entities (&eacute;, common in hand-made RSS) is read again in recovery mode,
// which drops those references rather than failing the whole feed.
doc_ptr read_xml(std::string_view bytes, std::string_view url, std::string_view what) {
  if (bytes.size() > max_feed_bytes)
    throw feed_error("the " + std::string(what) + " is larger than " +
                     std::to_string(max_feed_bytes / (1024 * 1024)) + " MiB");
  // An undeclared encoding is UTF-8 by the XML rules, but feeds saved by old tools are often
  // Latin-1 without saying so: read such bytes as Latin-1 rather than refuse them.
  const char* encoding = nullptr;
  if (!declares_encoding(bytes) && !valid_utf8(bytes))
    encoding = "ISO-8859-1";
  static const bool initialised = (xmlInitParser(), true); // once, before threads share it
  (void)initialised;
  const std::string base(url);
  int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<xmlParserCtxt, xml_free> ctxt(xmlNewParserCtxt());
    if (!ctxt)
      throw feed_error("out of memory reading the " + std::string(what));
    doc_ptr doc(xmlCtxtReadMemory(ctxt.get(), bytes.data(), static_cast<int>(bytes.size()),
                                  base.empty() ? nullptr : base.c_str(), encoding, options));
    const xmlError* error = xmlCtxtGetLastError(ctxt.get());
    // In recovery mode a document with dropped references is still not "well-formed".
    const bool failed = !doc || (!ctxt->wellFormed && !(options & XML_PARSE_RECOVER));
    if (!failed) {
      if (doc->intSubset && doc->intSubset->entities)
        throw feed_error("the " + std::string(what) +
                         " declares its own entities, which newsdesk does not expand");
      return doc;
    }
    if (attempt == 0 && error && error->code == XML_ERR_UNDECLARED_ENTITY) {
      options |= XML_PARSE_RECOVER;
      continue;
    }
    if (bytes.find_first_not_of(" \t\r\n") == std::string_view::npos)
      throw feed_error("the " + std::string(what) + " is empty");
    throw feed_error(describe(error));
  }
  throw feed_error("not well-formed XML");
}

bool named(const xmlNode* n, std::string_view name) {
  return n && n->type == XML_ELEMENT_NODE && view(n->name) == name;
}

bool in_ns(const xmlNode* n, std::string_view ns) {
  return n->ns && view(n->ns->href) == ns;
}

const xmlNode* first_child(const xmlNode* parent, std::string_view name) {
  for (const xmlNode* c = parent ? parent->children : nullptr; c; c = c->next)
    if (named(c, name))
      return c;
  return nullptr;
}

std::string attribute(const xmlNode* n, const char* name) {
  std::unique_ptr<xmlChar, xml_free> value(
      xmlGetProp(const_cast<xmlNode*>(n), reinterpret_cast<const xmlChar*>(name)));
  return std::string(view(value.get()));
}

std::string text_of(const xmlNode* n) {
  if (!n)
    return {};
  std::unique_ptr<xmlChar, xml_free> content(xmlNodeGetContent(n));
  return std::string(view(content.get()));
}

// An Atom text construct: type="html" holds escaped markup, type="xhtml" real elements; the
// headline is their text.
std::string atom_text(const xmlNode* n) {
  auto text = text_of(n);
  if (n && attribute(n, "type") == "html")
    return dom::document::parse(text).root().text();
  return text;
}

// The base an element's relative links resolve against: xml:base on it and its ancestors,
// over the document's URL (libxml2 combines them).
std::string base_of(const xmlNode* n) {
  std::unique_ptr<xmlChar, xml_free> base(xmlNodeGetBase(n->doc, n));
  return std::string(view(base.get()));
}

std::string resolved(const xmlNode* n, std::string_view href) {
  if (href.empty())
    return {};
  auto absolute = url::resolve(base_of(n), href);
  return absolute ? *absolute : std::string();
}

// An Atom entry's or feed's link to its page: rel="alternate", or a link without rel.
std::string atom_link(const xmlNode* parent) {
  for (const xmlNode* c = parent->children; c; c = c->next)
    if (named(c, "link")) {
      auto rel = attribute(c, "rel");
      if (rel.empty() || rel == "alternate")
        return resolved(c, attribute(c, "href"));
    }
  return {};
}

// An RSS item's link: <link>, else a <guid> that is a permalink (the default).
std::string rss_link(const xmlNode* item) {
  if (auto link = text_of(first_child(item, "link")); !link.empty())
    return resolved(item, collapse_whitespace(link));
  if (const auto* guid = first_child(item, "guid");
      guid && attribute(guid, "isPermaLink") != "false")
    return resolved(item, collapse_whitespace(text_of(guid)));
  if (auto about = attribute(item, "about"); !about.empty()) // RSS 1.0's rdf:about
    return resolved(item, about);
  return {};
}

} // namespace

feed parse_feed(std::string_view bytes, std::string_view feed_url, std::string_view site) {
  auto doc = read_xml(bytes, feed_url, "feed");
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!root)
    throw feed_error("not a feed: no root element");
  // The collector applies the shared title and URL rules; links arrive already absolute.
  static const dom::document no_page = dom::document::parse("");
  headline_collector collector(std::string(site), feed_url, no_page);
  feed out;
  std::size_t items = 0;
  // An item's publication date: the first of its date elements that reads as a plausible one.
  auto published = [&](const xmlNode* item, std::initializer_list<const char*> names) {
    for (const char* name : names)
      for (const xmlNode* c = item->children; c; c = c->next)
        if (named(c, name))
          if (auto t = plausible_date(text_of(c), collector.now_ms()))
            return t;
    return std::optional<std::int64_t>();
  };
  auto add = [&](std::string_view title, const std::string& link,
                 std::optional<std::int64_t> when) {
    ++items;
    if (!link.empty())
      collector.add(title, link, when);
  };
  // Once a site's page is full, the items after are never read (their titles and links never
  // built); far more items than any feed has (repeated or linkless) bound a hostile one's cost.
  auto more = [&] {
    return collector.size() < max_headlines_per_site && items < 10 * max_headlines_per_site;
  };

  if (named(root, "feed") && in_ns(root, atom_ns)) {
    out.title = collapse_whitespace(atom_text(first_child(root, "title")));
    out.home = atom_link(root);
    for (const xmlNode* c = root->children; c && more(); c = c->next)
      if (named(c, "entry"))
        add(atom_text(first_child(c, "title")), atom_link(c),
            published(c, {"published", "updated", "issued", "modified"}));
  } else if (named(root, "rss")) {
    const xmlNode* channel = first_child(root, "channel");
    if (!channel)
      throw feed_error("not a feed: <rss> has no <channel>");
    out.title = collapse_whitespace(text_of(first_child(channel, "title")));
    out.home = resolved(channel, collapse_whitespace(text_of(first_child(channel, "link"))));
    for (const xmlNode* c = channel->children; c && more(); c = c->next)
      if (named(c, "item"))
        add(text_of(first_child(c, "title")), rss_link(c), published(c, {"pubDate", "date"}));
  } else if (named(root, "RDF") && in_ns(root, rdf_ns)) {
    // RSS 1.0 and 0.90: the items are the channel's siblings.
    const xmlNode* channel = first_child(root, "channel");
    out.title = collapse_whitespace(text_of(first_child(channel, "title")));
    if (channel)
      out.home = resolved(channel, collapse_whitespace(text_of(first_child(channel, "link"))));
    for (const xmlNode* c = root->children; c && more(); c = c->next)
      if (named(c, "item"))
        add(text_of(first_child(c, "title")), rss_link(c), published(c, {"pubDate", "date"}));
  } else {
    throw feed_error("not a feed: the root element is <" + std::string(view(root->name)) +
                     "> (expected <rss>, <rdf:RDF> or Atom's <feed>)");
  }
  out.headlines = collector.take();
  return out;
}

std::vector<opml_outline> parse_opml(std::string_view bytes) {
  auto doc = read_xml(bytes, {}, "OPML list");
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!named(root, "opml"))
    throw feed_error("not an OPML list: the root element is <" +
                     std::string(root ? view(root->name) : "") + ">");
  const xmlNode* body = first_child(root, "body");
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
