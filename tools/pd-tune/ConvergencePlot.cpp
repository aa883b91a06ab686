//===- ConvergencePlot.cpp - Best time per evaluation as SVG --------------===//

#include "ConvergencePlot.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

static std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

void mlir::perfdojo::writeConvergencePlot(
    llvm::raw_ostream &os, llvm::StringRef title,
    llvm::ArrayRef<double> bestSeconds,
    llvm::ArrayRef<std::pair<std::string, double>> referenceSeconds) {
  const double width = 720, height = 420, left = 80, right = 150, top = 40,
               bottom = 50;
  double plotW = width - left - right, plotH = height - top - bottom;
  // The range, in log10(ms), over every value shown.
  double lo = INFINITY, hi = -INFINITY;
  auto include = [&](double seconds) {
    if (seconds > 0) {
      lo = std::min(lo, std::log10(seconds * 1e3));
      hi = std::max(hi, std::log10(seconds * 1e3));
    }
  };
  for (double s : bestSeconds)
    include(s);
  for (const auto &ref : referenceSeconds)
    include(ref.second);
  if (!std::isfinite(lo)) {
    lo = 0;
    hi = 1;
  }
  lo = std::floor(lo * 4) / 4 - 0.05;
  hi = std::ceil(hi * 4) / 4 + 0.05;
  size_t n = std::max<size_t>(bestSeconds.size(), 2);
  auto x = [&](size_t i) { return left + plotW * double(i) / double(n - 1); };
  auto y = [&](double seconds) {
    return top + plotH * (hi - std::log10(seconds * 1e3)) / (hi - lo);
  };

  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" font-family=\"sans-serif\" "
     << "font-size=\"12\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << "<text x=\"" << left << "\" y=\"24\" font-size=\"15\">"
     << escape(title) << "</text>\n";
  // Axes, with a tick at every power of ten and its halves on the time axis.
  os << "<path d=\"M" << left << " " << top << " V" << top + plotH << " H"
     << left + plotW << "\" stroke=\"black\" fill=\"none\"/>\n";
  for (double e = std::floor(lo); e <= hi; e += 1)
    for (double m : {1.0, 2.0, 5.0}) {
      double ms = m * std::pow(10, e);
      double l = std::log10(ms);
      if (l < lo || l > hi)
        continue;
      double yy = y(ms / 1e3);
      os << "<line x1=\"" << left << "\" x2=\"" << left + plotW << "\" y1=\""
         << yy << "\" y2=\"" << yy << "\" stroke=\"#ddd\"/>\n"
         << "<text x=\"" << left - 6 << "\" y=\"" << yy + 4
         << "\" text-anchor=\"end\">" << llvm::format("%g", ms) << "</text>\n";
    }
  for (size_t i = 0; i < 5; ++i) {
    size_t at = (n - 1) * i / 4;
    os << "<text x=\"" << x(at) << "\" y=\"" << top + plotH + 18
       << "\" text-anchor=\"middle\">" << at + 1 << "</text>\n";
  }
  os << "<text x=\"" << left + plotW / 2 << "\" y=\"" << height - 12
     << "\" text-anchor=\"middle\">evaluations</text>\n"
     << "<text transform=\"translate(18 " << top + plotH / 2
     << ") rotate(-90)\" text-anchor=\"middle\">best time (ms, log)</text>\n";
  // Reference lines.
  const char *colors[] = {"#888", "#d62728", "#2ca02c", "#9467bd"};
  for (auto [i, ref] : llvm::enumerate(referenceSeconds)) {
    if (ref.second <= 0)
      continue;
    double yy = y(ref.second);
    os << "<line x1=\"" << left << "\" x2=\"" << left + plotW << "\" y1=\""
       << yy << "\" y2=\"" << yy << "\" stroke=\"" << colors[i % 4]
       << "\" stroke-dasharray=\"6 4\"/>\n"
       << "<text x=\"" << left + plotW + 6 << "\" y=\"" << yy + 4
       << "\" fill=\"" << colors[i % 4] << "\">" << escape(ref.first) << " "
       << llvm::format("%.3g", ref.second * 1e3) << " ms</text>\n";
  }
  // The best-so-far staircase.
  std::string path;
  double previous = 0;
  for (auto [i, s] : llvm::enumerate(bestSeconds)) {
    if (s <= 0)
      continue;
    if (path.empty())
      path = llvm::formatv("M{0} {1}", x(i), y(s)).str();
    else
      path += llvm::formatv(" H{0} V{1}", x(i), y(s)).str();
    previous = s;
  }
  if (!path.empty()) {
    path += llvm::formatv(" H{0}", x(n - 1)).str();
    os << "<path d=\"" << path
       << "\" stroke=\"#1f77b4\" stroke-width=\"2\" fill=\"none\"/>\n"
       << "<text x=\"" << left + plotW + 6 << "\" y=\"" << y(previous) + 4
       << "\" fill=\"#1f77b4\">best " << llvm::format("%.3g", previous * 1e3)
       << " ms</text>\n";
  }
  os << "</svg>\n";
}
