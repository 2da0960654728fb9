import { createHash } from 'node:crypto';
import sharp from 'sharp';
import type { GeneratedImage, ImageProvider } from './types.js';

const SIZE = 256;
const CAPTION_LINE_CHARS = 34;
const CAPTION_MAX_LINES = 3;

/**
 * Offline image generator: procedural art whose palette and shapes are drawn from the SHA-256 of the
 * prompt, with the prompt as a caption, described as SVG and rasterised to PNG by sharp (libvips).
 * Same prompt, same bytes. A few milliseconds per image, so it also serves as the benchmark provider.
 */
export class BuiltinImageProvider implements ImageProvider {
  readonly name = 'builtin';

  async generate(prompt: string): Promise<GeneratedImage> {
    const art = artSvg(prompt);
    try {
      return { data: await rasterize(withCaption(art, prompt)), contentType: 'image/png' };
    } catch {
      // A host without usable fonts (or a text layout failure) must still get its image: drop the caption.
      return { data: await rasterize(withCaption(art, null)), contentType: 'image/png' };
    }
  }
}

async function rasterize(svg: string): Promise<Buffer> {
  // Opaque art: an RGB PNG. Level 4 without adaptive filtering is the cheapest setting that keeps the
  // files as small as level 6 with alpha (~19 KB); this call is most of a worker's CPU per image.
  return sharp(Buffer.from(svg)).removeAlpha().png({ compressionLevel: 4, adaptiveFiltering: false }).toBuffer();
}

/** Deterministic pseudo-random stream: SHA-256 of the prompt, re-hashed whenever it runs out. */
class HashStream {
  private block: Buffer;
  private offset = 0;

  constructor(seed: string) {
    this.block = createHash('sha256').update(seed, 'utf8').digest();
  }

  byte(): number {
    if (this.offset >= this.block.length) {
      this.block = createHash('sha256').update(this.block).digest();
      this.offset = 0;
    }
    return this.block[this.offset++];
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    const v = (this.byte() << 8) | this.byte();
    return min + (v % (max - min + 1));
  }
}

function artSvg(prompt: string): string {
  const rnd = new HashStream(prompt);
  const hue = rnd.int(0, 359);
  const hue2 = (hue + rnd.int(90, 270)) % 360;
  const parts: string[] = [];
  parts.push(
    `<defs><linearGradient id="bg" x1="0" y1="0" x2="1" y2="1">` +
      `<stop offset="0" stop-color="hsl(${hue},70%,${rnd.int(18, 35)}%)"/>` +
      `<stop offset="1" stop-color="hsl(${hue2},60%,${rnd.int(40, 60)}%)"/>` +
      `</linearGradient></defs>`,
    `<rect width="${SIZE}" height="${SIZE}" fill="url(#bg)"/>`,
  );
  const shapes = rnd.int(6, 14);
  for (let i = 0; i < shapes; i++) {
    const fill = `hsl(${(hue + rnd.int(0, 120)) % 360},${rnd.int(50, 90)}%,${rnd.int(35, 75)}%)`;
    const opacity = (rnd.int(25, 80) / 100).toFixed(2);
    const x = rnd.int(0, SIZE);
    const y = rnd.int(0, SIZE);
    switch (rnd.int(0, 2)) {
      case 0:
        parts.push(`<circle cx="${x}" cy="${y}" r="${rnd.int(8, 70)}" fill="${fill}" fill-opacity="${opacity}"/>`);
        break;
      case 1:
        parts.push(
          `<rect x="${x - 40}" y="${y - 40}" width="${rnd.int(10, 90)}" height="${rnd.int(10, 90)}" ` +
            `transform="rotate(${rnd.int(0, 89)} ${x} ${y})" fill="${fill}" fill-opacity="${opacity}"/>`,
        );
        break;
      default: {
        const pts = [0, 1, 2].map(() => `${rnd.int(0, SIZE)},${rnd.int(0, SIZE)}`).join(' ');
        parts.push(`<polygon points="${pts}" fill="${fill}" fill-opacity="${opacity}"/>`);
      }
    }
  }
  return parts.join('');
}

function withCaption(art: string, prompt: string | null): string {
  let caption = '';
  if (prompt !== null) {
    const lines = wrap(prompt, CAPTION_LINE_CHARS, CAPTION_MAX_LINES);
    const lineHeight = 14;
    const top = SIZE - 8 - lines.length * lineHeight;
    caption =
      `<rect x="0" y="${top - 6}" width="${SIZE}" height="${SIZE - top + 6}" fill="#000" fill-opacity="0.55"/>` +
      `<text font-family="DejaVu Sans, Verdana, sans-serif" font-size="11" fill="#fff">` +
      lines.map((l, i) => `<tspan x="8" y="${top + 10 + i * lineHeight}">${escapeXml(l)}</tspan>`).join('') +
      `</text>`;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${SIZE}" height="${SIZE}" viewBox="0 0 ${SIZE} ${SIZE}">${art}${caption}</svg>`;
}

/** Greedy word wrap; words longer than a line are cut; overflow ends in an ellipsis. */
export function wrap(text: string, width: number, maxLines: number): string[] {
  const words = text.replace(/\s+/g, ' ').trim().split(' ');
  const lines: string[] = [];
  let current = '';
  for (let word of words) {
    while (word.length > width) {
      if (current) {
        lines.push(current);
        current = '';
      }
      lines.push(word.slice(0, width));
      word = word.slice(width);
    }
    if (!current) current = word;
    else if (current.length + 1 + word.length <= width) current += ' ' + word;
    else {
      lines.push(current);
      current = word;
    }
  }
  if (current) lines.push(current);
  if (lines.length > maxLines) {
    const kept = lines.slice(0, maxLines);
    kept[maxLines - 1] = kept[maxLines - 1].slice(0, width - 1) + '…';
    return kept;
  }
  return lines;
}

function escapeXml(s: string): string {
  // Control characters are not allowed in XML 1.0 even when escaped; they would break the whole SVG.
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '').replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
