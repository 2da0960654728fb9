/** The logging the domain and data layers need; pino (Fastify's logger) satisfies it. */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: Logger = {
  info() {},
  warn() {},
  error() {},
};
