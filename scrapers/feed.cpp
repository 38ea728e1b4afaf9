#include "scrapers/feed.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/url.hpp"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlreader.h>

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

namespace {

struct reader_free {
  void operator()(xmlTextReader* r) const { xmlFreeTextReader(r); }
};

// The first error libxml2 reports while reading, for the message; its copy's strings freed
// with it, however reading ends.
struct first_error {
  std::optional<xmlError> error;
  first_error() = default;
  first_error(const first_error&) = delete;
  first_error& operator=(const first_error&) = delete;
  ~first_error() {
    if (error)
      xmlResetError(&*error);
  }
  static void keep(void* into, xmlErrorPtr reported) {
    auto& kept = static_cast<first_error*>(into)->error;
    if (!kept && reported) {
      kept.emplace();
      xmlCopyError(reported, &*kept);
    }
  }
};

// A feed read as a stream, element by element: each item (or entry) is expanded into a tree of
// its own, read, and freed before the next is read, so a feed of 200,000 items never holds more
// than one, and reading stops once the site's page is full. Throws feed_error; `recover` says
// the error was an undeclared entity (HTML's &eacute;), worth reading again in recovery mode.
struct feed_stream {
  headline_collector& collector;
  feed out;
  std::size_t items = 0;
  bool recover = false;

  // An item's publication date: the first of its date elements that reads as a plausible one.
  std::optional<std::int64_t> published(const xmlNode* item,
                                        std::initializer_list<const char*> names) {
    for (const char* name : names)
      for (const xmlNode* c = item->children; c; c = c->next)
        if (named(c, name))
          if (auto t = plausible_date(text_of(c), collector.now_ms()))
            return t;
    return std::nullopt;
  }
  void add(std::string_view title, const std::string& link, std::optional<std::int64_t> when) {
    ++items;
    if (!link.empty())
      collector.add(title, link, when);
  }
  // Once a site's page is full, the items after are never read; far more items than any feed
  // has (repeated or linkless) bound a hostile one's cost.
  bool more() const {
    return collector.size() < max_headlines_per_site && items < 10 * max_headlines_per_site;
  }

  enum class kind { unknown, atom, rss, rdf };

  static kind kind_of(std::string_view name, std::string_view ns) {
    if (name == "feed" && ns == atom_ns)
      return kind::atom;
    if (name == "rss")
      return kind::rss;
    if (name == "RDF" && ns == rdf_ns)
      return kind::rdf;
    throw feed_error("not a feed: the root element is <" + std::string(name) +
                     "> (expected <rss>, <rdf:RDF> or Atom's <feed>)");
  }

  // One of the feed's elements, read whole: an item or entry, or the feed's title or link.
  void take(kind root, std::string_view name, const xmlNode* node) {
    if (root == kind::atom) {
      if (name == "entry")
        add(atom_text(first_child(node, "title")), atom_link(node),
            published(node, {"published", "updated", "issued", "modified"}));
      else if (name == "title" && out.title.empty())
        out.title = collapse_whitespace(atom_text(node));
      else if (name == "link" && out.home.empty()) {
        auto rel = attribute(node, "rel");
        if (rel.empty() || rel == "alternate")
          out.home = resolved(node, attribute(node, "href"));
      }
    } else if (name == "item") {
      add(text_of(first_child(node, "title")), rss_link(node),
          published(node, {"pubDate", "date"}));
    } else if (name == "language" && out.language.empty()) {
      out.language = collapse_whitespace(text_of(node)).substr(0, max_language_bytes);
    } else if (name == "title" && out.title.empty()) {
      out.title = collapse_whitespace(text_of(node));
    } else if (name == "link" && out.home.empty()) {
      out.home = resolved(node, collapse_whitespace(text_of(node)));
    }
  }

  // The same, over a whole tree: for a feed the stream cannot read (libxml2's reader gives up
  // at an undeclared entity even in recovery mode; the tree parser drops the reference).
  void walk(const xmlDoc* doc) {
    const xmlNode* top = xmlDocGetRootElement(doc);
    if (!top)
      throw feed_error("not a feed: no root element");
    const auto root = kind_of(view(top->name), top->ns ? view(top->ns->href) : "");
    const xmlNode* channel = root == kind::atom ? nullptr : first_child(top, "channel");
    if (root == kind::rss && !channel)
      throw feed_error("not a feed: <rss> has no <channel>");
    for (const xmlNode* c = channel ? channel->children : nullptr; c && more(); c = c->next)
      if (c->type == XML_ELEMENT_NODE)
        take(root, view(c->name), c);
    if (root != kind::rss)
      for (const xmlNode* c = top->children; c && more(); c = c->next)
        if (c->type == XML_ELEMENT_NODE && (root == kind::atom || view(c->name) == "item"))
          take(root, view(c->name), c);
  }

  void read(std::string_view bytes, const std::string& base, const char* encoding, int options) {
    first_error kept; // outlives the reader that reports into it
    const auto& error = kept.error;
    std::unique_ptr<xmlTextReader, reader_free> reader(
        xmlReaderForMemory(bytes.data(), static_cast<int>(bytes.size()),
                           base.empty() ? nullptr : base.c_str(), encoding, options));
    if (!reader)
      throw feed_error("out of memory reading the feed");
    xmlTextReaderSetStructuredErrorHandler(reader.get(), first_error::keep, &kept);
    kind root = kind::unknown;
    int channel_depth = -1; // RSS 2.0's <channel>: its children are the feed's and its items
    int status = xmlTextReaderRead(reader.get());
    while (status == 1 && more()) {
      const int type = xmlTextReaderNodeType(reader.get());
      if (type == XML_READER_TYPE_DOCUMENT_TYPE) {
        // The DTD node itself (xmlTextReaderCurrentDoc would hand the document over to us, and
        // it would outlive the reader unless freed by hand).
        const auto* dtd = reinterpret_cast<const xmlDtd*>(xmlTextReaderCurrentNode(reader.get()));
        if (dtd && dtd->type == XML_DTD_NODE && dtd->entities)
          throw feed_error("the feed declares its own entities, which newsdesk does not expand");
      }
      if (type != XML_READER_TYPE_ELEMENT) {
        status = xmlTextReaderRead(reader.get());
        continue;
      }
      const int depth = xmlTextReaderDepth(reader.get());
      const auto name = view(xmlTextReaderConstLocalName(reader.get()));
      const auto ns = view(xmlTextReaderConstNamespaceUri(reader.get()));
      if (depth == 0) {
        root = kind_of(name, ns);
        status = xmlTextReaderRead(reader.get());
        continue;
      }
      // The feed's own title and link, and its items: each read whole, then skipped past.
      const bool atom_child = root == kind::atom && depth == 1;
      const bool channel_child = depth == channel_depth + 1 && channel_depth >= 1 &&
                                 (root == kind::rss || root == kind::rdf);
      const bool rdf_item = root == kind::rdf && depth == 1 && name == "item";
      if (depth == 1 && name == "channel" && root != kind::atom) {
        channel_depth = 1;
        status = xmlTextReaderRead(reader.get()); // into it
        continue;
      }
      if (!atom_child && !channel_child && !rdf_item) {
        status = xmlTextReaderNext(reader.get());
        continue;
      }
      const xmlNode* node = xmlTextReaderExpand(reader.get());
      if (!node)
        break; // the error handler has the reason
      take(root, name, node);
      status = xmlTextReaderNext(reader.get());
    }
    if (status < 0 || (error && error->level >= XML_ERR_ERROR && !(options & XML_PARSE_RECOVER))) {
      recover = error && error->code == XML_ERR_UNDECLARED_ENTITY;
      const auto message = describe(error ? &*error : nullptr);
      if (bytes.find_first_not_of(" \t\r\n") == std::string_view::npos)
        throw feed_error("the feed is empty");
      throw feed_error(message);
    }
    if (root == kind::unknown)
      throw feed_error("not a feed: no root element");
    if (root == kind::rss && channel_depth < 0)
      throw feed_error("not a feed: <rss> has no <channel>");
  }
};

} // namespace

feed parse_feed(std::string_view bytes, std::string_view feed_url, std::string_view site) {
  if (bytes.size() > max_feed_bytes)
    throw feed_error("the feed is larger than " + std::to_string(max_feed_bytes / (1024 * 1024)) +
                     " MiB");
  // An undeclared encoding is UTF-8 by the XML rules, but feeds saved by old tools are often
  // Latin-1 without saying so: read such bytes as Latin-1 rather than refuse them.
  const char* encoding = !declares_encoding(bytes) && !valid_utf8(bytes) ? "ISO-8859-1" : nullptr;
  static const bool initialised = (xmlInitParser(), true); // once, before threads share it
  (void)initialised;
  const std::string base(feed_url);
  // The collector applies the shared title and URL rules; links arrive already absolute.
  static const dom::document no_page = dom::document::parse("");
  // Without network access, DTD loading or entity substitution: no external entity is ever
  // read, and internal ones are refused. A feed that only uses HTML's named entities (&eacute;,
  // common in hand-made RSS) is read again in recovery mode, which drops those references.
  const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA;
  headline_collector collector(std::string(site), feed_url, no_page);
  collector.authored_titles();
  feed_stream stream{collector, {}, 0, false};
  try {
    stream.read(bytes, base, encoding, options);
  } catch (const feed_error&) {
    if (!stream.recover)
      throw;
    // HTML's named entities: read as a tree in recovery mode (read_xml), which drops them.
    headline_collector again(std::string(site), feed_url, no_page);
    again.authored_titles();
    feed_stream tree{again, {}, 0, false};
    tree.walk(read_xml(bytes, feed_url, "feed").get());
    tree.out.headlines = again.take();
    return std::move(tree.out);
  }
  stream.out.headlines = collector.take();
  return std::move(stream.out);
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
