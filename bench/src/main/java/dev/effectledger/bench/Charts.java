package dev.effectledger.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** The PNG charts of the benchmark reports, drawn with XChart. */
final class Charts {

  static {
    System.setProperty("java.awt.headless", "true"); // drawn to files; no display here or in CI
  }

  private Charts() {}

  /** Throughput against the number of instances. */
  static Path scaling(Map<Integer, List<Double>> results, Path file) throws IOException {
    XYChart chart =
        new XYChartBuilder()
            .width(800)
            .height(500)
            .title("Ledger throughput by instances (exactly_once_v2)")
            .xAxisTitle("instances (one stream thread each)")
            .yAxisTitle("intents/s (median)")
            .build();
    List<Double> x = new ArrayList<>();
    List<Double> y = new ArrayList<>();
    results.forEach(
        (n, runs) -> {
          x.add(n.doubleValue());
          y.add(runs.stream().sorted().toList().get(runs.size() / 2));
        });
    chart.addSeries("ledger", x, y).setMarker(SeriesMarkers.CIRCLE);
    return save(chart, file);
  }

  /** p99 latency against offered load, one line per side and commit interval. */
  static Path latency(List<LatencyBench.Point> points, Path file) throws IOException {
    XYChart chart =
        new XYChartBuilder()
            .width(900)
            .height(550)
            .title("p99 latency by offered load (exactly_once_v2)")
            .xAxisTitle("offered load (intents/s)")
            .yAxisTitle("p99 latency (ms)")
            .build();
    chart.getStyler().setXAxisLogarithmic(true);
    chart.getStyler().setYAxisLogarithmic(true);
    Map<String, List<LatencyBench.Point>> bySeries = new TreeMap<>();
    for (LatencyBench.Point p : points) {
      bySeries
          .computeIfAbsent(
              (p.executorMs() == 0 ? "baseline" : "ledger (executor " + p.executorMs() + " ms)")
                  + ", commit "
                  + p.commitMs()
                  + " ms",
              k -> new ArrayList<>())
          .add(p);
    }
    bySeries.forEach(
        (name, series) ->
            chart
                .addSeries(
                    name,
                    series.stream().map(p -> (double) p.load()).toList(),
                    series.stream().map(p -> Math.max(0.1, p.p99())).toList())
                .setMarker(SeriesMarkers.CIRCLE));
    return save(chart, file);
  }

  private static Path save(XYChart chart, Path file) throws IOException {
    Files.createDirectories(file.getParent());
    BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    return file;
  }
}
