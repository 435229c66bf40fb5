// SPDX-License-Identifier: Apache-2.0
#include "html_report.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "chart_choice.hpp"
#include "html_tables.hpp"
#include "ranking.hpp"
#include "summary.hpp"

namespace backoff::report {
namespace fs = std::filesystem;

namespace plotting {
namespace {

// gnuplot's SVG without what draws nothing: the indentation, and the empty groups it writes
// around every tic and grid line (a third of a small-multiples chart). Only whole lines that
// are an empty group's open and close tags go; every drawing element is kept as it was.
std::string compact_svg(std::string_view svg) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < svg.size();) {
    std::size_t end = svg.find('\n', at);
    if (end == std::string_view::npos) end = svg.size();
    std::string_view line = svg.substr(at, end - at);
    const std::size_t first = line.find_first_not_of(" \t");
    lines.push_back(first == std::string_view::npos ? std::string_view{} : line.substr(first));
    at = end + 1;
  }
  const auto opens_group = [](std::string_view l) {
    return l.starts_with("<g ") && l.ends_with(">") && !l.ends_with("/>") &&
           l.find('<', 1) == std::string_view::npos;
  };
  std::vector<std::string_view> kept;
  for (std::string_view line : lines) {
    if (line.empty()) continue;
    if (line == "</g>" && !kept.empty() && opens_group(kept.back())) {
      kept.pop_back();  // an empty group, possibly emptied by this pass
      continue;
    }
    kept.push_back(line);
  }
  std::string out;
  out.reserve(svg.size());
  for (std::string_view line : kept) {
    out += line;
    out += '\n';
  }
  return out;
}

// How a chart is embedded: its SVG as a data: URI, percent-encoded rather than base64 (base64
// adds a third). Only what would change meaning is encoded: '%' (an escape), '#' (a URL's
// fragment), '"' and '&' (the HTML attribute), controls (a URL parser drops newlines and tabs)
// and bytes above ASCII; '<', '>' and gnuplot's single quotes are plain in both a data: URL's
// body (WHATWG URL: an opaque path percent-encodes only controls) and an attribute value.
std::string svg_data_uri(std::string_view svg) {
  std::string out = "data:image/svg+xml;charset=utf-8,";
  out.reserve(out.size() + svg.size() + svg.size() / 8);
  for (const char ch : svg) {
    const auto c = static_cast<unsigned char>(ch);
    const bool raw = c >= 0x20 && c < 0x7f && ch != '%' && ch != '#' && ch != '"' && ch != '&';
    if (raw) {
      out += ch;
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// The page's style sheet, the end of its head and the start of its body.
constexpr const char* report_style = R"(<style>
body { font-family: "DejaVu Sans", sans-serif; margin: 1.5em auto; max-width: 1340px;
       padding: 0 1em; color: #222; }
p, ul, dl { max-width: 1000px; }
h1 { margin-bottom: 0.2em; }
p.lede { font-size: 1.1em; color: #333; margin-top: 0.2em; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; }
table.ranking { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
table.ranking th, table.ranking td { border-bottom: 1px solid #ddd; padding: 0.25em 0.45em;
      text-align: left; vertical-align: top; white-space: nowrap; }
div.table { overflow-x: auto; }
table.ranking th { background: #f0f0f0; }
table.ranking .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table#ranking tbody tr:first-child td { font-weight: bold; }
table.ranking td.headline { white-space: normal; min-width: 30em; }
table.ranking td.wrap { white-space: normal; min-width: 14em; }
p.rule { color: #555; font-size: 0.85em; }
div.beside { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; margin: 1em 0; }
div.beside > div { border: 1px solid #ddd; background: #fafafa; padding: 0.3em 0.9em; }
div.beside h3 { margin: 0.4em 0; font-size: 1em; }
div.beside ul { padding-left: 1.2em; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 0.6em; overflow-x: auto;
      font-size: 12px; line-height: 1.3; }
figure { margin: 1.5em 0; }
figure img { display: block; width: 900px; max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9em; margin-top: 0.3em; }
nav a { margin-right: 0.8em; }
</style>
</head>
<body data-images="pending">
)";

// Lets a headless browser (tests/browser/report_screenshot.sh) tell that every chart decoded.
constexpr const char* report_script = R"(<script>
window.addEventListener("load", function () {
  var imgs = document.querySelectorAll("img.chart"), ok = 0;
  for (var i = 0; i < imgs.length; ++i) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) ++ok;
  }
  document.body.setAttribute("data-images",
      (ok === imgs.length ? "images-ok " : "images-broken ") + ok + "/" + imgs.length);
  // Whether every table fits the page's width as it is shown (its cells never wrap).
  var tables = document.querySelectorAll("table.ranking"), over = 0;
  for (var j = 0; j < tables.length; ++j) {
    if (tables[j].scrollWidth > tables[j].parentElement.clientWidth + 1) ++over;
  }
  document.body.setAttribute("data-tables",
      (over === 0 ? "tables-fit " : "tables-overflow " + over + "/") + tables.length);
});
</script>
</body>
</html>
)";

// The page down to its advice: the head (the title, the verdict the index reads back, the style
// sheet), the scenario's name and its description. `name` is already escaped.
std::string page_top(const scenario_result& r, const std::string& name) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>backoff sim: " + name + "</title>\n";
  // The index (write_report_index) reads the verdict back from here.
  if (const std::string one_line = verdict(r); !one_line.empty()) {
    h += "<meta name=\"backoff-verdict\" content=\"" + html_escape(one_line) + "\">\n";
  }
  h += report_style;
  h += "<h1>" + name + "</h1>\n";
  if (!r.description.empty()) h += "<p class=\"lede\">" + html_escape(r.description) + "</p>\n";
  return h;
}

// Our answers, and beside them what the scenario's source says.
std::string beside_html(const scenario_result& r, const std::vector<std::string>& answers) {
  if (answers.empty() && r.claim.empty() && r.source.empty()) return {};
  std::string h = "<div class=\"beside\">\n<div class=\"ours\"><h3>Our result</h3>\n<ul>\n";
  for (const auto& a : answers) h += "<li>" + html_escape(a) + "</li>\n";
  if (answers.empty()) h += "<li>(nothing ran)</li>\n";
  h += "</ul></div>\n<div class=\"source\"><h3>The source's claim</h3>\n";
  if (!r.claim.empty()) h += "<p class=\"claim\">" + html_escape(r.claim) + "</p>\n";
  if (!r.source.empty()) {
    h += "<p class=\"cite\">Source: " + html_escape(r.source) + "</p>\n";
  }
  if (r.claim.empty() && r.source.empty()) {
    h += "<p>(the scenario has no <code>[about]</code> claim)</p>\n";
  }
  return h + "</div>\n</div>\n";
}

// The --set overrides as given, comma-separated.
std::string joined_sets(const report_inputs& inputs) {
  std::string sets;
  for (const auto& s : inputs.sets) sets += (sets.empty() ? "" : ", ") + s;
  return sets;
}

// What ran: the model, the seed, where the scenario came from, its size and the overrides.
std::string facts_html(const scenario_result& r, const report_inputs& inputs,
                       const std::string& sets) {
  std::string h = "<h2 id=\"facts\">Run</h2>\n<dl class=\"facts\">\n";
  const auto fact = [&](std::string_view k, const std::string& v) {
    h += "<dt>" + html_escape(k) + "</dt><dd>" + html_escape(v) + "</dd>\n";
  };
  fact("model", r.model);
  fact("seed", std::to_string(r.seed));
  if (!inputs.scenario_path.empty()) fact("scenario file", inputs.scenario_path);
  if (r.sweep) {
    std::string keys;
    for (const auto& k : r.sweep_keys) keys += (keys.empty() ? "" : ", ") + k;
    fact("swept", keys.empty() ? "(replications only)" : keys);
    fact("points", std::to_string(r.points.size()));
    fact("replications", std::to_string(r.replications));
  } else if (!r.strategies.empty()) {
    fact("strategies", std::to_string(r.strategies.size()));
  }
  fact("events", std::to_string(r.events));
  if (!sets.empty()) fact("overrides (--set)", sets);
  return h + "</dl>\n";
}

// Links to the page's sections and to each embedded chart.
std::string nav_html(const report_advice& advice, const std::vector<chart>& charts,
                     const report_inputs& inputs, bool services) {
  std::string h = "<nav>";
  if (!advice.table.empty()) h += "<a href=\"#advice\">" + html_escape(advice.heading) + "</a>";
  for (const auto& c : charts) {
    if (c.embed) h += "<a href=\"#" + html_escape(c.name) + "\">" + html_escape(c.name) + "</a>";
  }
  if (services) h += "<a href=\"#services\">services</a>";
  h += "<a href=\"#table\">comparison table</a>";
  if (!inputs.scenario_toml.empty()) h += "<a href=\"#parameters\">parameters</a>";
  return h + "</nav>\n";
}

// The embedded charts, each a figure with its caption, after a line naming those left on disk.
std::string charts_html(const output_folder& folder, const std::vector<chart>& charts) {
  std::string h = "<h2>Charts</h2>\n";
  std::string on_disk;
  for (const auto& c : charts) {
    if (!c.embed) on_disk += (on_disk.empty() ? "" : ", ") + c.name;
  }
  if (!on_disk.empty()) {
    h += "<p class=\"rule\">Also in this folder, not shown here (as PNG and SVG): " +
         html_escape(on_disk) + ".</p>\n";
  }
  for (const auto& c : charts) {
    if (!c.embed) continue;
    // SVG, not PNG: it is the same bytes with the same gnuplot and scales on any screen. The PNG
    // beside it on disk is for documents and slides.
    const std::string svg = read_whole_file(folder.dir() / (c.name + ".svg"));
    h += "<figure id=\"" + html_escape(c.name) + "\">\n<img class=\"chart\" alt=\"" +
         html_escape(c.caption) + "\" width=\"" + std::to_string(c.width) + "\" height=\"" +
         std::to_string(c.height) + "\" src=\"" + svg_data_uri(compact_svg(svg)) +
         "\">\n<figcaption>" + html_escape(c.caption) + " (" + html_escape(c.name) + ".png, " +
         html_escape(c.name) + ".svg)</figcaption>\n</figure>\n";
  }
  return h;
}

// The comparison table as the terminal shows it, and the scenario's source text.
std::string source_html(const scenario_result& r, const report_inputs& inputs,
                        const std::string& sets) {
  std::string h =
      "<h2 id=\"table\">Comparison</h2>\n<pre>" + html_escape(comparison_table(r)) + "</pre>\n";
  if (!inputs.scenario_toml.empty()) {
    h += "<h2 id=\"parameters\">Parameters</h2>\n";
    if (!sets.empty()) h += "<p>Overridden with --set: " + html_escape(sets) + "</p>\n";
    h += "<pre>" + html_escape(inputs.scenario_toml) + "</pre>\n";
  }
  return h;
}

}  // namespace

void write_report(const scenario_result& r, output_folder& folder, const report_inputs& inputs,
                  const std::vector<chart>& charts) {
  const report_advice advice = advice_of(r);
  const std::string sets = joined_sets(inputs);
  std::string h = page_top(r, html_escape(r.scenario));
  if (!advice.table.empty()) {
    h += "<h2 id=\"advice\">" + html_escape(advice.heading) + "</h2>\n" + advice.table;
  }
  if (inputs.simulated != nullptr) h += twin_html(r, *inputs.simulated);
  h += beside_html(r, advice.answers);
  h += facts_html(r, inputs, sets);
  const std::string services = services_html(r);
  h += nav_html(advice, charts, inputs, !services.empty());
  h += charts_html(folder, charts);
  h += services;
  h += source_html(r, inputs, sets);
  h += report_script;
  folder.write("report.html", h);
}

}  // namespace plotting

namespace {

// The one-line verdict a report put in its <meta name="backoff-verdict"> (already escaped for
// HTML there: it holds no quote), read back for the index; empty when the link leaves the folder
// or the report has none.
std::string verdict_of_report(const fs::path& dir, const std::string& href) {
  const fs::path rel(href);
  if (rel.empty() || rel.is_absolute()) return {};
  for (const auto& part : rel) {
    if (part == "..") return {};
  }
  std::error_code ec;
  if (!fs::is_regular_file(dir / rel, ec)) return {};
  const std::string html = read_whole_file(dir / rel);
  const std::string tag = "<meta name=\"backoff-verdict\" content=\"";
  const std::size_t at = html.find(tag);
  if (at == std::string::npos) return {};
  const std::size_t begin = at + tag.size();
  const std::size_t end = html.find('"', begin);
  if (end == std::string::npos) return {};
  return html.substr(begin, end - begin);
}

}  // namespace

void write_report_index(output_folder& folder, const std::vector<report_link>& links) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<title>backoff sim: reports</title>\n"
      << plotting::report_style
      << "<h1>backoff sim: reports</h1>\n<p class=\"lede\">One report per scenario, and what "
         "each recommends.</p>\n<div class=\"table\"><table class=\"ranking\" id=\"index\">\n"
         "<thead><tr><th>scenario</th><th>model</th><th class=\"num\">seed</th>"
         "<th>headline</th></tr></thead>\n<tbody>\n";
  for (const auto& link : links) {
    // The headline is the longest cell: the one that may wrap.
    out << "<tr><td><a href=\"" << plotting::html_escape(link.href) << "\">"
        << plotting::html_escape(link.scenario) << "</a></td><td>"
        << plotting::html_escape(link.model) << "</td><td class=\"num\">" << link.seed
        << "</td><td class=\"headline\">" << verdict_of_report(folder.dir(), link.href)
        << "</td></tr>\n";
  }
  out << "</tbody>\n</table></div>\n" << plotting::report_script;
  folder.write("index.html", out.str());
}

}  // namespace backoff::report
