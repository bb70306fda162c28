// Paging by cursor, for the lists that answer next_cursor (deliveries,
// inbound calls): Next follows next_cursor, Previous goes back through the
// cursors of the pages before. The hash holds them (cursor: this page's;
// back: those of pages 2 to n-1, dot-separated, as cursors are base64url),
// so that Previous, a reload and a shared link all work. Any page costs
// the API the same, however deep.

import { h, link } from './dom.js';

// pageOf reads the page from a hash's parameters; the first page has no
// cursor.
export function pageOf(params) {
  const cursor = params.get('cursor') || '';
  const back = cursor ? (params.get('back') || '').split('.').filter(Boolean) : [];
  return { cursor, back, number: cursor ? back.length + 2 : 1 };
}

// setPage puts a page's cursors in hash parameters q.
export function setPage(q, page) {
  if (!page.cursor) return q;
  q.set('cursor', page.cursor);
  if (page.back.length) q.set('back', page.back.join('.'));
  return q;
}

// nextPage is the page after page, whose answer gave nextCursor.
export function nextPage(page, nextCursor) {
  return { cursor: nextCursor, back: page.cursor ? [...page.back, page.cursor] : [], number: page.number + 1 };
}

// prevPage is the page before page (null on the first).
export function prevPage(page) {
  if (!page.cursor) return null;
  const cursor = page.back.length ? page.back[page.back.length - 1] : '';
  return { cursor, back: cursor ? page.back.slice(0, -1) : [], number: page.number - 1 };
}

// pager draws Previous, "Page n of m · total <noun>s" and Next for res, the
// answer to page; hashOf makes the hash of another page. The count of
// pages is the total's: rows written since the first page may make a
// page's number lag behind it. The API stops counting at 10,000 rows
// (total_capped): past that, "more than".
export function pager({ page, res, size, noun, hashOf, ids }) {
  const total = res.total;
  const capped = !!res.total_capped;
  const pages = Math.max(page.number, Math.ceil(total / size), 1);
  const of = capped ? `${pages}+` : String(pages);
  const count = capped ? `more than ${total.toLocaleString('en')} ${noun}s` : `${total} ${noun}${total === 1 ? '' : 's'}`;
  const button = (to, text, testid) => to
    ? link(hashOf(to), text, { class: 'button secondary', 'data-testid': testid })
    : h('span', { class: 'button secondary disabled', 'aria-disabled': 'true', 'data-testid': testid }, text);
  const prev = prevPage(page);
  const next = res.next_cursor ? nextPage(page, res.next_cursor) : null;
  return h('div', { class: 'pager', 'data-testid': ids.pager || null },
    button(prev, '← Previous', ids.prev),
    h('span', { 'data-testid': ids.info, 'data-total': total, 'data-total-capped': String(capped), 'data-page': page.number },
      `Page ${page.number} of ${of} · ${count}`),
    button(next, 'Next →', ids.next));
}
