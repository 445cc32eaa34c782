// Removes dist/ before a build, so a packed tarball holds only what this build made.
import { rmSync } from "node:fs";

rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
