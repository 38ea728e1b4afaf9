#!/usr/bin/env python3
"""The "encodings" kind of the feed corpus (tests/feeds/corpus/README.md), made from text.

Each case is a small RSS or Atom feed written here as text and encoded by Python's codecs: with
or without a byte order mark, with or without an XML declaration naming the encoding, and with
or without an HTTP Content-Type charset. The bytes are made on demand rather than checked in:
UTF-16/32, Shift_JIS or GB18030 files are unreadable in a diff and easy for a tool on the way
(an editor, a git filter) to "fix"; here every case is readable and its bytes are exact.

Usage: encoded_corpus.py OUT_DIR   writes each case as OUT_DIR/NAME.xml, and its Content-Type,
                                   if it has one, as OUT_DIR/NAME.xml.content-type
As a module: cases() -> [(name, bytes, content_type or None)].
"""

import os
import sys

BOMS = {
    "utf-8": b"\xef\xbb\xbf",
    "utf-16-le": b"\xff\xfe",
    "utf-16-be": b"\xfe\xff",
    "utf-32-le": b"\xff\xfe\x00\x00",
    "utf-32-be": b"\x00\x00\xfe\xff",
}


def rss(host, titles):
    """An RSS 2.0 feed (without its XML declaration) whose items have `titles`."""
    items = "".join(
        "    <item>\n      <title>%s</title>\n      <link>https://%s/%d</link>\n    </item>\n"
        % (title, host, n)
        for n, title in enumerate(titles, 1)
    )
    return (
        '<rss version="2.0">\n  <channel>\n    <title>%s</title>\n'
        "    <link>https://%s/</link>\n%s  </channel>\n</rss>\n" % (host, host, items)
    )


def atom(host, titles):
    """An Atom 1.0 feed (without its XML declaration) whose entries have `titles`."""
    entries = "".join(
        "  <entry>\n    <title>%s</title>\n    <link href=\"https://%s/e/%d\"/>\n"
        "    <id>tag:%s,2024:%d</id>\n    <updated>2024-01-0%dT00:00:00Z</updated>\n  </entry>\n"
        % (title, host, n, host, n, n)
        for n, title in enumerate(titles, 1)
    )
    return (
        '<feed xmlns="http://www.w3.org/2005/Atom">\n  <title>%s</title>\n'
        "  <id>https://%s/</id>\n  <updated>2024-01-09T00:00:00Z</updated>\n%s</feed>\n"
        % (host, host, entries)
    )


LATIN = ["Caf\u00e9 cr\u00e8me prices rise in Qu\u00e9bec", "Gr\u00fc\u00dfe aus K\u00f6ln, sagt der B\u00fcrgermeister"]
RUSSIAN = ["\u041d\u043e\u0432\u043e\u0441\u0442\u0438 \u0434\u043d\u044f \u0432 \u041c\u043e\u0441\u043a\u0432\u0435", "\u041f\u043e\u0433\u043e\u0434\u0430 \u043d\u0430 \u0437\u0430\u0432\u0442\u0440\u0430"]
JAPANESE = ["\u6771\u4eac\u3067\u685c\u304c\u958b\u82b1", "\u65b0\u3057\u3044\u99c5\u304c\u958b\u696d\u3057\u307e\u3057\u305f"]
KOREAN = ["\uc11c\uc6b8\uc758 \ub0a0\uc528 \uc18c\uc2dd", "\uc0c8\ub85c\uc6b4 \uc9c0\ud558\ucca0 \ub178\uc120 \uac1c\ud1b5"]
CHINESE = ["\u5317\u4eac\u4eca\u5929\u7684\u5929\u6c14", "\u65b0\u7684\u5730\u94c1\u7ebf\u8def\u5f00\u901a"]
TRADITIONAL = ["\u81fa\u5317\u4eca\u5929\u7684\u5929\u6c23", "\u65b0\u7684\u6377\u904b\u7dda\u958b\u901a"]
MIXED = ["Caf\u00e9 \u2014 \u201cquoted\u201d and \u20ac5", "\u6771\u4eac \u041c\u043e\u0441\u043a\u0432\u0430 \U0001F600 emoji"]


def case(name, text, codec, declared=None, bom=False, content_type=None):
    """One case: `text` (a feed without declaration) encoded with `codec`; `declared` is the
    encoding its XML declaration names (None: a declaration without one, "": no declaration)."""
    if declared is None:
        head = '<?xml version="1.0"?>\n'
    elif declared == "":
        head = ""
    else:
        head = '<?xml version="1.0" encoding="%s"?>\n' % declared
    data = (head + text).encode(codec)
    if bom:
        data = BOMS[codec] + data
    return (name, data, content_type)


def cases():
    return [
        case("utf8_no_declaration", rss("u8.example.com", MIXED), "utf-8", declared=""),
        case("utf8_declared", atom("u8d.example.com", MIXED), "utf-8", declared="UTF-8"),
        case("utf8_bom", rss("u8bom.example.com", MIXED), "utf-8", declared="utf-8", bom=True),
        case("utf8_bom_no_declaration", atom("u8b.example.com", LATIN), "utf-8", declared="", bom=True),
        case("utf16le_bom_declared", rss("u16le.example.com", MIXED), "utf-16-le", "UTF-16", bom=True),
        case("utf16be_bom_declared", atom("u16be.example.com", MIXED), "utf-16-be", "utf-16", bom=True),
        case("utf16le_bom_only", atom("u16leb.example.com", JAPANESE), "utf-16-le", declared="", bom=True),
        case("utf16be_no_bom_declared", rss("u16nb.example.com", RUSSIAN), "utf-16-be", "UTF-16"),
        case("utf16le_no_bom_declared", rss("u16lenb.example.com", LATIN), "utf-16-le", "UTF-16LE"),
        case("utf32le_bom_declared", rss("u32le.example.com", MIXED), "utf-32-le", "UTF-32", bom=True),
        case("utf32be_bom_declared", atom("u32be.example.com", CHINESE), "utf-32-be", "UTF-32", bom=True),
        case("iso8859_1_declared", rss("latin1.example.fr", LATIN), "iso-8859-1", "ISO-8859-1"),
        case("iso8859_15_declared", rss("latin9.example.fr", ["Prix \u00e0 20\u20ac le kilo", "\u0152uvres de Mus\u00e9e"]), "iso-8859-15", "iso-8859-15"),
        case("windows1252_declared", rss("cp1252.example.com", ["The editor\u2019s \u201cpicks\u201d \u2013 part two", "Caf\u00e9 \u2026 closed"]), "cp1252", "windows-1252"),
        case("windows1251_declared", rss("cp1251.example.ru", RUSSIAN), "cp1251", "windows-1251"),
        case("koi8r_declared", atom("koi8.example.ru", RUSSIAN), "koi8-r", "KOI8-R"),
        case("shift_jis_declared", rss("sjis.example.jp", JAPANESE), "shift_jis", "Shift_JIS"),
        case("euc_jp_declared", atom("eucjp.example.jp", JAPANESE), "euc-jp", "EUC-JP"),
        case("euc_kr_declared", rss("euckr.example.kr", KOREAN), "euc-kr", "EUC-KR"),
        case("gb18030_declared", rss("gb.example.cn", CHINESE), "gb18030", "GB18030"),
        case("gb2312_declared", atom("gb2312.example.cn", CHINESE), "gb2312", "gb2312"),
        case("big5_declared", rss("big5.example.tw", TRADITIONAL), "big5", "Big5"),
        # Labels the web writes that are not the registry's names.
        case("label_ks_c_5601_1987", rss("ksc.example.kr", KOREAN), "cp949", "ks_c_5601-1987"),
        case("label_x_mac_roman", atom("mac.example.com", LATIN), "mac-roman", "x-mac-roman"),
        case("label_latin1_lowercase", rss("l1.example.de", LATIN), "iso-8859-1", "latin1"),
        # Bytes that are not what the declaration says: Latin-1 declared as UTF-8.
        case("mislabelled_latin1_as_utf8", rss("mislabel.example.fr", LATIN), "iso-8859-1", "utf-8"),
        # The HTTP header's charset: for a document without a declaration, and over a
        # declaration that is wrong (RFC 7303: the header wins over the declaration).
        case("http_charset_koi8r", rss("httpkoi.example.ru", RUSSIAN), "koi8-r", declared="",
             content_type="application/rss+xml; charset=koi8-r"),
        case("http_charset_over_declaration", rss("httpover.example.ru", RUSSIAN), "cp1251",
             "ISO-8859-1", content_type="application/xml; charset=windows-1251"),
        case("http_charset_quoted", atom("httpq.example.jp", JAPANESE), "shift_jis", declared="",
             content_type='application/atom+xml; charset="Shift_JIS"'),
        case("http_charset_latin1", rss("httplatin.example.de", LATIN), "iso-8859-1", "utf-8",
             content_type="application/rss+xml;charset=ISO-8859-1"),
    ]


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: encoded_corpus.py OUT_DIR", file=sys.stderr)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, data, content_type in cases():
        path = os.path.join(sys.argv[1], name + ".xml")
        with open(path, "wb") as f:
            f.write(data)
        if content_type:
            with open(path + ".content-type", "w") as f:
                f.write(content_type + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
