#!/usr/bin/env python3
"""Writes the charset test's pages (tests/scrapers/charset_test.cpp) into the folder it is given.

For each charset, one news page in its language, encoded with Python's codecs (not with ICU, which
reads them back), three ways: declared in a <meta> only (NAME.meta.html), declared nowhere in the
page (NAME.bare.html: the test serves it once with the charset in the Content-Type and once with
none, for detection), and the same page in UTF-8 (NAME.utf8.html), whose titles the others must
give. Usage: make_charset_pages.py OUT_DIR
"""
import os
import sys

# charset label as pages declare it, Python codec, and headlines in the charset's language.
PAGES = [
    ("Shift_JIS", "shift_jis", "ja", [
        "東京で新しい地震観測網が稼働、揺れを数秒早く予測",
        "日本銀行が金利を据え置き、物価見通しを上方修正",
        "大阪の博覧会、来場者が一千万人を突破",
        "北海道で記録的な大雪、交通機関に大きな乱れ",
        "新型ロケットの打ち上げに成功、宇宙開発に弾み",
    ]),
    ("EUC-KR", "euc_kr", "ko", [
        "서울 지하철 새 노선 개통, 출퇴근 시간 단축 기대",
        "한국은행 기준금리 동결, 물가 상승 우려 여전",
        "부산 국제영화제 개막, 세계 각국 영화인 참석",
        "제주도 관광객 증가, 지역 경제 회복세 뚜렷",
        "국회 예산안 통과, 복지 예산 대폭 늘어",
    ]),
    ("GB18030", "gb18030", "zh", [
        "北京举行新一轮经济工作会议，部署明年重点任务",
        "上海港集装箱吞吐量创历史新高",
        "广州地铁新线路开通，市民出行更加便利",
        "长江流域降雨偏多，防汛工作全面展开",
        "科学家发现新的古代文明遗址，考古价值重大",
    ]),
    ("windows-1251", "cp1251", "ru", [
        "В Москве открылась новая станция метро на севере города",
        "Центробанк сохранил ключевую ставку на прежнем уровне",
        "В Петербурге начался международный экономический форум",
        "Сибирь накрыли сильные морозы, в школах отменены занятия",
        "Учёные представили новый способ переработки пластика",
    ]),
    ("ISO-8859-1", "latin_1", "fr", [
        "À Paris, la grève des cheminots se poursuit pour la troisième journée",
        "L'économie française résiste malgré la hausse des prix de l'énergie",
        "Crème brûlée et café: les Français célèbrent la gastronomie",
        "Météo: des orages violents attendus dans le Sud-Ouest",
        "Élections régionales: les électeurs appelés aux urnes dimanche",
    ]),
]


def page(lang, headlines, head_extra):
    items = "\n".join(
        f'<li><a href="/story/{i}">{title}</a></li>' for i, title in enumerate(headlines))
    # Body text in the language too: a page says more than its links, and detection reads it.
    text = " ".join(headlines)
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head>{head_extra}<title>News</title></head>\n'
            f"<body><ul>\n{items}\n</ul>\n<p>{text}</p>\n<p>{text}</p></body></html>\n")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for index, (label, codec, lang, headlines) in enumerate(PAGES):
        # Both ways the standard's prescan reads: <meta charset> and the http-equiv pragma.
        meta = (f'<meta charset="{label}">' if index % 2 == 0 else
                f'<meta http-equiv="Content-Type" content="text/html; charset={label}">')
        with open(os.path.join(out, label + ".meta.html"), "wb") as f:
            f.write(page(lang, headlines, meta).encode(codec))
        with open(os.path.join(out, label + ".bare.html"), "wb") as f:
            f.write(page(lang, headlines, "").encode(codec))
        with open(os.path.join(out, label + ".utf8.html"), "wb") as f:
            f.write(page(lang, headlines, "").encode("utf-8"))


if __name__ == "__main__":
    main()
