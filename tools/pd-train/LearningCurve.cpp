//===- LearningCurve.cpp - pd-train's learning curve as SVG ---------------===//

#include "LearningCurve.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

using namespace mlir;
using namespace mlir::perfdojo;

void mlir::perfdojo::writeLearningCurve(llvm::raw_ostream &os,
                                        llvm::StringRef title,
                                        llvm::ArrayRef<CurvePoint> points) {
  const double width = 760, height = 420, left = 70, right = 170, top = 40,
               bottom = 50;
  double plotW = width - left - right, plotH = height - top - bottom;
  double lo = 0, hi = 0; // log10 of the speedup; 1x is always shown
  unsigned episodes = 1;
  for (const CurvePoint &p : points) {
    if (p.bestSpeedup > 0) {
      lo = std::min(lo, std::log10(p.bestSpeedup));
      hi = std::max(hi, std::log10(p.bestSpeedup));
    }
    episodes = std::max(episodes, p.episode + 1);
  }
  if (hi - lo < 0.3)
    hi = lo + 0.3;
  auto x = [&](double episode) {
    return left + plotW * episode / std::max(1u, episodes - 1);
  };
  auto y = [&](double speedup) {
    return top + plotH * (hi - std::log10(speedup)) / (hi - lo);
  };
  static const char *colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                  "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  std::map<std::string, std::vector<const CurvePoint *>> byKernel;
  for (const CurvePoint &p : points)
    byKernel[p.kernel].push_back(&p);

  os << llvm::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                     "height=\"%.0f\" font-family=\"sans-serif\" "
                     "font-size=\"12\">\n",
                     width, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::format("<text x=\"%.0f\" y=\"22\" font-size=\"14\">", left)
     << title << "</text>\n";
  os << llvm::format("<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
                     "height=\"%.0f\" fill=\"none\" stroke=\"#888\"/>\n",
                     left, top, plotW, plotH);
  // Speedup gridlines at powers of two.
  for (int e = int(std::floor(lo / std::log10(2.0)));
       e <= int(std::ceil(hi / std::log10(2.0))); ++e) {
    double s = std::pow(2.0, e);
    if (std::log10(s) < lo - 1e-9 || std::log10(s) > hi + 1e-9)
      continue;
    os << llvm::format("<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                       "stroke=\"#eee\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                       "text-anchor=\"end\">%gx</text>\n",
                       left, left + plotW, y(s), y(s), left - 6, y(s) + 4, s);
  }
  os << llvm::format("<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">"
                     "episode (of %u)</text>\n",
                     left + plotW / 2, height - 12, episodes);
  os << llvm::format("<text x=\"18\" y=\"%.0f\" transform=\"rotate(-90 18 "
                     "%.0f)\" text-anchor=\"middle\">best speedup in the "
                     "episode</text>\n",
                     top + plotH / 2, top + plotH / 2);
  // Epsilon, dashed, on a 0..1 scale of the plot's height.
  std::string eps;
  for (const CurvePoint &p : points)
    eps += llvm::formatv("{0:f1},{1:f1} ", x(p.episode),
                         top + plotH * (1 - p.epsilon))
               .str();
  os << "<polyline fill=\"none\" stroke=\"#aaa\" stroke-dasharray=\"4 3\" "
        "points=\""
     << eps << "\"/>\n";
  unsigned index = 0;
  for (auto &[kernel, series] : byKernel) {
    const char *colour = colours[index % std::size(colours)];
    std::string line;
    for (auto [i, p] : llvm::enumerate(series)) {
      if (p->bestSpeedup > 0)
        os << llvm::format("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" "
                           "fill=\"%s\" opacity=\"0.6\"/>\n",
                           x(p->episode), y(p->bestSpeedup), colour);
      double sum = 0;
      unsigned count = 0;
      for (size_t j = i >= 4 ? i - 4 : 0; j <= i; ++j)
        if (series[j]->bestSpeedup > 0) {
          sum += std::log10(series[j]->bestSpeedup);
          ++count;
        }
      if (count)
        line += llvm::formatv("{0:f1},{1:f1} ", x(p->episode),
                              y(std::pow(10.0, sum / count)))
                    .str();
    }
    os << "<polyline fill=\"none\" stroke=\"" << colour
       << "\" stroke-width=\"1.5\" points=\"" << line << "\"/>\n";
    os << llvm::format("<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">", left + plotW + 10,
                       top + 14 + 16.0 * index, colour)
       << kernel << "</text>\n";
    ++index;
  }
  os << llvm::format("<text x=\"%.0f\" y=\"%.0f\" fill=\"#888\">- - epsilon"
                     "</text>\n</svg>\n",
                     left + plotW + 10, top + 14 + 16.0 * index);
}
