// A site's colour as each colour scheme shows it: standing out from the page's backgrounds, with
// text that reads on it (WCAG 1.4.11 and 1.4.3). The page and its tests compute them here.
#pragma once

#include <string>
#include <string_view>

namespace newsdesk::server {

// "#000000" or "#ffffff", whichever reads better on the given "#rgb"/"#rrggbb" background: at
// least 4.58:1 whatever the colour.
std::string text_colour_for(std::string_view background);

// `colour`, or the nearest colour towards white (on a dark `background`) or black (on a light
// one) that stands out from `background` at least 3:1, as a site's chip and stripe must (WCAG
// 1.4.11): BBC's #2b2b2b on the dark page's #121212 was 1.32:1. Both "#rgb" or "#rrggbb"; a
// colour that is neither is returned as it is.
std::string colour_against(std::string_view colour, std::string_view background);

// The pages' backgrounds a site's colour must stand out from, light and dark (static/news.css:
// the page and the cards).
inline constexpr std::string_view light_backgrounds[] = {"#f6f6f3", "#ffffff"};
inline constexpr std::string_view dark_backgrounds[] = {"#121212", "#1f1f1f"};

// `colour` against each of `backgrounds` in turn (colour_against): the scheme's colour for a site.
template <class Backgrounds>
std::string colour_for_scheme(std::string colour, const Backgrounds& backgrounds) {
  for (auto background : backgrounds)
    colour = colour_against(colour, background);
  return colour;
}

} // namespace newsdesk::server
