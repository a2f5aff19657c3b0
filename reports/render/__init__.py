"""A report run's files: `csv_bytes` for spreadsheets, `pdf_bytes` for people (reportlab)."""

from .csvfile import CSV_COLUMNS, csv_bytes
from .pdffile import pdf_bytes

__all__ = ["CSV_COLUMNS", "csv_bytes", "pdf_bytes"]
