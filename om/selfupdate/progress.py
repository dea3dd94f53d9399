"""Download progress on stderr: a redrawn bar on a terminal, two plain lines otherwise."""

import time


class Progress:
    def __init__(self, stream, name, total):
        self.stream = stream
        self.name = name
        self.total = total if isinstance(total, int) and total > 0 else 0
        self.done = 0
        self._last = 0.0
        try:
            self.tty = bool(stream) and stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        if self.stream and not self.tty:
            self._write(f"om: downloading {name} ({_size(self.total)})\n")

    def _write(self, text):
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def advance(self, n):
        self.done += n
        if not self.tty:
            return
        now = time.monotonic()
        if now - self._last < 0.05 and self.done < self.total:
            return
        self._last = now
        frac = min(1.0, self.done / self.total) if self.total else 0.0
        width = 30
        filled = int(frac * width)
        bar = "#" * filled + "-" * (width - filled)
        self._write(f"\r{self.name} [{bar}] {frac * 100:3.0f}% {_size(self.done)}/{_size(self.total)}")

    def finish(self, ok=True):
        if not self.stream:
            return
        if self.tty:
            self._write("\n")
        elif ok:
            self._write(f"om: downloaded {self.name} ({_size(self.done)})\n")


def _size(n):
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KB"
    return f"{n} B"
