// Reading /news's HTML in tests: the page carries an empty headline, telling and story card in
// <template> elements (for what arrives live), which a count of what the page shows must leave out.
#pragma once

#include <string>

namespace newsdesk::testing {

// `html` without its <template>...</template> elements.
inline std::string without_templates(std::string html) {
  for (auto at = html.find("<template"); at != std::string::npos; at = html.find("<template", at)) {
    const auto end = html.find("</template>", at);
    html.erase(at, end == std::string::npos ? std::string::npos : end + 11 - at);
  }
  return html;
}

} // namespace newsdesk::testing
