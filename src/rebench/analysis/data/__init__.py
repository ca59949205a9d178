"""Data files of the analysis (human reference facts); a package so that they ship."""
