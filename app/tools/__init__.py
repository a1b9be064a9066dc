"""The code of the declared tools the app provides itself (no agent brings it)."""

from app.tools.export import ArticleExport

__all__ = ["ArticleExport"]
