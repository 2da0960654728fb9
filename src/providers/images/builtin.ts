import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { CONTENT_TYPES, IMAGE_FORMATS, parseSize, type ImageFormat, type ImageOffer } from '../../domain/jobs/options.js';
import type { GenerateOptions, GeneratedImage, ImageProvider } from './types.js';

/** The art is drawn on this grid and scaled to the size asked for. */
const GRID = 256;
const CAPTION_LINE_CHARS = 34;
const CAPTION_MAX_LINES = 3;

export const BUILTIN_OFFER: ImageOffer = Object.freeze({
  sizes: ['256x256', '512x512', '1024x1024', '1024x576', '576x1024'],
  defaultSize: '256x256',
  formats: [...IMAGE_FORMATS],
  seed: true,
  negativePrompt: true,
});

type Shape = 'circle' | 'rect' | 'triangle';

/** Words of a negative prompt that leave a kind of shape out of the drawing. */
const SHAPE_WORDS: Record<string, Shape> = {
  circle: 'circle', circles: 'circle', round: 'circle', dots: 'circle',
  square: 'rect', squares: 'rect', rectangle: 'rect', rectangles: 'rect', boxes: 'rect',
  triangle: 'triangle', triangles: 'triangle', polygon: 'triangle', polygons: 'triangle',
};

/** Words of a negative prompt that keep a hue (±30°) out of the palette. */
const HUE_WORDS: Record<string, number> = { red: 0, orange: 30, yellow: 60, green: 120, cyan: 180, blue: 225, purple: 275, violet: 275, pink: 320, magenta: 320 };

/**
 * Offline image generator: procedural art whose palette and shapes are drawn from the SHA-256 of the
 * prompt (and seed), with the prompt as a caption, described as SVG and rasterised by sharp (libvips)
 * at the size asked for, as PNG, WebP or JPEG. Same prompt, seed, size and format: same bytes.
 * A negative prompt is read for shape words (circles, squares, triangles: that kind of shape is left
 * out) and colour words (red, blue, …: no shape or background takes a hue near it); other words change
 * nothing. A few milliseconds per small image, so it also serves as the benchmark provider.
 */
export class BuiltinImageProvider implements ImageProvider {
  readonly name = 'builtin';
  readonly offer = BUILTIN_OFFER;

  async generate(prompt: string, options: GenerateOptions = {}): Promise<GeneratedImage> {
    const { width, height } = options.size ?? parseSize(BUILTIN_OFFER.defaultSize)!;
    const format = options.format ?? 'png';
    const avoid = avoidances(options.negativePrompt ?? null);
    // Without a seed the stream is the prompt's alone: the bytes of jobs made before seeds stay the same.
    const art = artSvg(options.seed == null ? prompt : `${prompt}\u0000seed:${options.seed}`, avoid);
    const contentType = CONTENT_TYPES[format];
    try {
      return { data: await rasterize(svgDocument(art, prompt, width, height), format), contentType, width, height };
    } catch {
      // A host without usable fonts (or a text layout failure) must still get its image: drop the caption.
      return { data: await rasterize(svgDocument(art, null, width, height), format), contentType, width, height };
    }
  }
}

async function rasterize(svg: string, format: ImageFormat): Promise<Buffer> {
  const image = sharp(Buffer.from(svg)).removeAlpha();
  switch (format) {
    case 'png':
      // Opaque art: an RGB PNG. Level 4 without adaptive filtering is the cheapest setting that keeps the
      // files as small as level 6 with alpha (~19 KB at 256x256); this call is most of a worker's CPU.
      return image.png({ compressionLevel: 4, adaptiveFiltering: false }).toBuffer();
    case 'webp':
      return image.webp({ quality: 80, effort: 2 }).toBuffer();
    case 'jpeg':
      return image.jpeg({ quality: 82, mozjpeg: false }).toBuffer();
  }
}

interface Avoid {
  shapes: Set<Shape>;
  hues: number[];
}

function avoidances(negativePrompt: string | null): Avoid {
  const avoid: Avoid = { shapes: new Set(), hues: [] };
  for (const word of (negativePrompt ?? '').toLowerCase().split(/[^a-z]+/)) {
    if (SHAPE_WORDS[word]) avoid.shapes.add(SHAPE_WORDS[word]);
    if (HUE_WORDS[word] !== undefined) avoid.hues.push(HUE_WORDS[word]);
  }
  return avoid;
}

/** `hue`, moved past every avoided hue's ±30° band (on the side it is nearer to the band's end). */
function allowedHue(hue: number, avoid: Avoid): number {
  let h = ((hue % 360) + 360) % 360;
  for (let pass = 0; pass < avoid.hues.length * 2; pass++) {
    const near = avoid.hues.find((a) => Math.min(Math.abs(h - a), 360 - Math.abs(h - a)) < 30);
    if (near === undefined) break;
    h = (near + 30 + (pass % 2 === 0 ? 0 : 120)) % 360;
  }
  return h;
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

function artSvg(seed: string, avoid: Avoid): string {
  const SIZE = GRID;
  const rnd = new HashStream(seed);
  const hue = allowedHue(rnd.int(0, 359), avoid);
  const hue2 = allowedHue((hue + rnd.int(90, 270)) % 360, avoid);
  const parts: string[] = [];
  parts.push(
    `<defs><linearGradient id="bg" x1="0" y1="0" x2="1" y2="1">` +
      `<stop offset="0" stop-color="hsl(${hue},70%,${rnd.int(18, 35)}%)"/>` +
      `<stop offset="1" stop-color="hsl(${hue2},60%,${rnd.int(40, 60)}%)"/>` +
      `</linearGradient></defs>`,
    `<rect width="${SIZE}" height="${SIZE}" fill="url(#bg)"/>`,
  );
  const shapes = rnd.int(6, 14);
  const kinds = (['circle', 'rect', 'triangle'] as const).filter((k) => !avoid.shapes.has(k));
  for (let i = 0; i < shapes; i++) {
    const fill = `hsl(${allowedHue(hue + rnd.int(0, 120), avoid)},${rnd.int(50, 90)}%,${rnd.int(35, 75)}%)`;
    const opacity = (rnd.int(25, 80) / 100).toFixed(2);
    const x = rnd.int(0, SIZE);
    const y = rnd.int(0, SIZE);
    const pick = rnd.int(0, 2);
    // Every draw is taken either way, so leaving a kind out does not reshuffle the shapes that stay.
    if (kinds.length === 0) continue;
    const kind = avoid.shapes.size === 0 ? (['circle', 'rect', 'triangle'] as const)[pick] : kinds[pick % kinds.length];
    switch (kind) {
      case 'circle':
        parts.push(`<circle cx="${x}" cy="${y}" r="${rnd.int(8, 70)}" fill="${fill}" fill-opacity="${opacity}"/>`);
        break;
      case 'rect':
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

/**
 * The art (a GRID square) covers the whole image, cropped to its aspect ratio rather than stretched; the
 * caption is laid out on a GRID-wide band scaled to the image's width, so it reads the same at any size.
 */
function svgDocument(art: string, prompt: string | null, width: number, height: number): string {
  let caption = '';
  if (prompt !== null) {
    const scale = width / GRID;
    const bottom = height / scale;
    const lines = wrap(prompt, CAPTION_LINE_CHARS, CAPTION_MAX_LINES);
    const lineHeight = 14;
    const top = bottom - 8 - lines.length * lineHeight;
    caption =
      `<g transform="scale(${scale})">` +
      `<rect x="0" y="${top - 6}" width="${GRID}" height="${bottom - top + 6}" fill="#000" fill-opacity="0.55"/>` +
      `<text font-family="DejaVu Sans, Verdana, sans-serif" font-size="11" fill="#fff">` +
      lines.map((l, i) => `<tspan x="8" y="${top + 10 + i * lineHeight}">${escapeXml(l)}</tspan>`).join('') +
      `</text></g>`;
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<svg width="${width}" height="${height}" viewBox="0 0 ${GRID} ${GRID}" preserveAspectRatio="xMidYMid slice">${art}</svg>${caption}</svg>`
  );
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
