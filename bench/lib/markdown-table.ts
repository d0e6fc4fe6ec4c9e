/**
 * A Markdown table padded so it also reads well in a terminal: `numeric` columns (by header) are
 * right-aligned, the rest left-aligned.
 */
export function markdownTable(
  header: readonly string[],
  body: readonly (readonly string[])[],
  numeric: ReadonlySet<string>,
): string {
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...body.map((line) => (line[column] ?? '').length)),
  );
  const render = (cells: readonly string[]) =>
    `| ${cells
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        return numeric.has(header[column] ?? '') ? cell.padStart(width) : cell.padEnd(width);
      })
      .join(' | ')} |`;
  const rule = `| ${widths
    .map((width, column) =>
      numeric.has(header[column] ?? '') ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width),
    )
    .join(' | ')} |`;
  return [render(header), rule, ...body.map(render)].join('\n');
}
