import { defineConfig } from "vite";

// Static files in dist/, relative paths so that any static server (the demo's, nginx, IPFS)
// can serve them from any folder.
export default defineConfig({
  base: "./",
  build: { target: "es2022", outDir: "dist", chunkSizeWarningLimit: 2000 },
});
