"""The page around the charts: one self-contained HTML file (inline CSS, SVG and a little
script; no URL is ever requested, so it opens from a mail attachment or a CI artifact), a
print stylesheet, and the small HTML pieces every report shares (cards, tables, notes)."""
from __future__ import annotations

from typing import Sequence

from ... import __version__
from .svg import defs, esc

CSS = """
:root{--ink:#1d232a;--muted:#5b6672;--line:#d6dbe0;--bg:#fff;--panel:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",
 "Liberation Sans",Arial,sans-serif;color:var(--ink);background:var(--bg)}
main{max-width:1360px;margin:0 auto;padding:16px 24px 40px}
header h1{font-size:22px;margin:0 0 2px}
header .sub{color:var(--muted);margin:0 0 12px;word-break:break-all}
h2{font-size:17px;margin:26px 0 4px;padding-top:8px;border-top:1px solid var(--line)}
p.intro{color:var(--muted);margin:0 0 8px;max-width:1100px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 12px;
 min-width:170px}
.card b{display:block;font-size:19px}.card span{color:var(--muted);font-size:12px}
.warn{background:#fff4e5;border:1px solid #f0b45b;border-radius:6px;padding:6px 10px;margin:8px 0}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:4px 0 6px;font-size:13px}
.key{display:inline-flex;align-items:center;gap:5px}
.sw{display:inline-block;width:14px;height:11px;border-radius:2px;border:1px solid #0003}
.controls{margin:2px 0 4px;font-size:12px}
.controls button{font:inherit;border:1px solid var(--line);background:#fff;border-radius:4px;
 padding:2px 9px;margin-right:3px;cursor:pointer}
.controls button.on{background:var(--ink);color:#fff;border-color:var(--ink)}
.controls .sep{color:var(--muted);margin:0 6px 0 10px}.controls .sep:first-child{margin-left:0}
.figure[data-scale=log] svg[data-scale=lin],.figure[data-scale=lin] svg[data-scale=log]
 {display:none}
svg{display:block;max-width:100%;height:auto;overflow:visible}
svg text{font-size:12px;fill:var(--ink)}
svg .tick{fill:var(--muted);font-size:11px}svg .axis-label{font-size:12px;fill:var(--muted)}
svg .grid{stroke:#e8ebee}svg .axis{stroke:#8a949e}
svg .whisker{stroke:#1d232a;stroke-width:1.2;fill:none}
svg .connector{stroke:#8a949e;stroke-dasharray:3 3}
svg .note{font-size:11px;font-weight:600}svg .col-label{font-size:11px}
svg .row-label{font-size:11.5px}svg .lane-label{font-size:11.5px;fill:var(--muted)}
svg .bar:hover,svg .excess:hover,svg .span:hover{stroke:#000;stroke-width:1}
svg .ref{stroke-width:1.5;stroke-dasharray:6 3}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}
th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.db{position:relative;text-align:right;min-width:70px}
td.db i{position:absolute;left:0;top:3px;bottom:3px;background:#4e79a733;z-index:-1}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:4px 0;font-size:13px}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;word-break:break-word}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:0 28px}
ul.lines{margin:4px 0;padding-left:18px}ul.lines li{margin:2px 0}
pre{background:var(--panel);padding:8px;border-radius:6px;white-space:pre-wrap;font-size:12px}
#tip{position:fixed;pointer-events:none;background:#1d232aee;color:#fff;padding:6px 9px;
 border-radius:5px;font-size:12px;white-space:pre-line;max-width:560px;display:none;z-index:9}
footer{margin-top:30px;color:var(--muted);font-size:12px}
@media print{
 @page{size:A4 portrait;margin:10mm}
 body{font-size:10px}main{max-width:none;padding:0}
 .controls,#tip{display:none!important}
 h2{break-after:avoid}.legend,p.intro{break-after:avoid;break-inside:avoid}
 svg{break-inside:avoid;max-height:265mm;width:auto;max-width:100%}
 .cols{grid-template-columns:1fr 1fr}
}
"""

SCRIPT = """
(function(){
var tip=document.getElementById('tip');
document.querySelectorAll('svg title').forEach(function(t){
  t.parentNode.setAttribute('data-tip',t.textContent);t.remove();});
document.addEventListener('mousemove',function(e){
  var el=e.target.closest?e.target.closest('[data-tip]'):null;
  if(!el){tip.style.display='none';return;}
  tip.textContent=el.getAttribute('data-tip');tip.style.display='block';
  var x=e.clientX+14,y=e.clientY+14,w=tip.offsetWidth,h=tip.offsetHeight;
  if(x+w>innerWidth-8)x=e.clientX-w-14;if(y+h>innerHeight-8)y=e.clientY-h-14;
  tip.style.left=x+'px';tip.style.top=y+'px';});
function order(fig,key){
  var by={};
  fig.querySelectorAll('g.rows').forEach(function(g){
    var sc=g.closest('svg').getAttribute('data-scale')||'';(by[sc]=by[sc]||[]).push(g);});
  Object.keys(by).forEach(function(sc){
    var rows=[];by[sc].forEach(function(g){rows=rows.concat(Array.prototype.slice.call(g.children));});
    rows.sort(function(a,b){return (+a.getAttribute('data-k-'+key))-(+b.getAttribute('data-k-'+key));});
    var i=0;by[sc].forEach(function(g){
      var n=+(g.dataset.n||rows.length),y0=+g.dataset.y0,h=+g.dataset.rowh;
      for(var k=0;k<n&&i<rows.length;k++,i++){
        rows[i].setAttribute('transform','translate(0,'+(y0+k*h)+')');g.appendChild(rows[i]);}
    });});}
document.querySelectorAll('.figure .controls button').forEach(function(b){
  b.addEventListener('click',function(){
    var fig=b.closest('.figure'),attr=b.dataset.order?'order':'scale';
    fig.querySelectorAll('button[data-'+attr+']').forEach(function(o){o.classList.toggle('on',o===b);});
    if(b.dataset.order)order(fig,b.dataset.order);else fig.setAttribute('data-scale',b.dataset.scale);
  });});
document.body.setAttribute('data-ready','1');
})();
"""


def section(ident: str, heading: str, intro: str, body: str) -> str:
    return (f'<section id="{esc(ident)}"><h2>{esc(heading)}</h2>'
            + (f'<p class="intro">{intro}</p>' if intro else "") + body + "</section>")


def cards(items: Sequence[tuple[str, str]]) -> str:
    """Headline figures: (value, what it is)."""
    return '<div class="cards">' + "".join(
        f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for v, k in items) + "</div>"


def kv(pairs: Sequence[tuple[str, object]]) -> str:
    return '<dl class="kv">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs
                                       if v not in (None, "")) + "</dl>"


def lines(items: Sequence[str], cls: str = "lines") -> str:
    """A bullet list of sentences (blank ones dropped; nothing at all when none is left)."""
    items = [x.strip() for x in items if x and x.strip()]
    return f'<ul class="{cls}">' + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>" \
        if items else ""


def warnings(items: Sequence[str]) -> str:
    """One box listing what makes the numbers less trustworthy (busy machine, partial...)."""
    items = [w for w in items if w]
    if not items:
        return ""
    return '<div class="warn">' + "<br>".join(esc(w) for w in items) + "</div>"


def table(head: Sequence[str], body: Sequence[Sequence[object]], numeric: set[int],
          bars: dict[int, float] | None = None) -> str:
    """An HTML table; ``bars``: column -> the value a full-width data bar stands for."""
    bars = bars or {}
    out = ["<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for row in body:
        cells = []
        for c, v in enumerate(row):
            if c in bars and isinstance(v, (int, float)):
                share = 100 * v / bars[c] if bars[c] else 0
                cells.append(f'<td class="db"><i style="width:{share:.0f}%"></i>{v:,.0f}</td>')
            else:
                cells.append(f'<td class="num">{esc(v)}</td>' if c in numeric
                             else f"<td>{esc(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "".join(out) + "</tbody></table>"


def document(title: str, subtitle: str, sections: Sequence[str], kind: str) -> str:
    """The whole file. ``kind`` (profile, diagnosis, compare) is recorded on <body> for tools."""
    body = "".join(s for s in sections if s)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f'<meta name="generator" content="minigraph {esc(__version__)}">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>"
            f'<body data-report="{esc(kind)}">{defs()}<div id="tip"></div><main>'
            f'<header><h1>{esc(title)}</h1><p class="sub">{esc(subtitle)}</p></header>'
            f"{body}<footer>minigraph {esc(__version__)}: a self-contained report (inline SVG, "
            f"no network). Hover a bar for its numbers; buttons re-order or re-scale a chart."
            f"</footer></main><script>{SCRIPT}</script></body></html>\n")
