"""How a result shows itself in a Jupyter notebook: ``_repr_html_`` draws the same page as
``--html`` (report/html/ registers its renderers here, so this room imports nothing above it),
inside an isolated frame so the page's styles and script cannot touch the notebook's."""
from __future__ import annotations

import html
from typing import Callable

_RENDERERS: dict[type, Callable[[object], str]] = {}
FRAME_HEIGHT_PX = 720


def register_html(cls: type, render: Callable[[object], str]) -> None:
    """``render(obj)`` -> a whole HTML page for objects of ``cls`` (report/html/__init__.py)."""
    _RENDERERS[cls] = render


class Displayable:
    """A result that draws itself in a notebook once report/html/ is imported (minigraph.api
    imports it); before that, the notebook shows its repr."""

    def _repr_html_(self) -> str | None:
        render = _RENDERERS.get(type(self))
        if render is None:
            return None
        page = html.escape(render(self), quote=True)
        return (f'<iframe srcdoc="{page}" sandbox="allow-scripts" style="width:100%;'
                f'height:{FRAME_HEIGHT_PX}px;border:0"></iframe>')
