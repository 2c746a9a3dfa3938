"""Evaluating: per-question metrics, reports over labeled question sets, and their files and plots."""
