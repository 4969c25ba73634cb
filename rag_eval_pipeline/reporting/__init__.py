"""Human-readable reports of an evaluation partition (self-contained HTML, inline SVG charts)."""

from rag_eval_pipeline.reporting.html_report import ReportData, collect_report_data, render_report

__all__ = ["ReportData", "collect_report_data", "render_report"]
