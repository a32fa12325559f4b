// Loaded between require.js and embed-amd.js (see nb_ipywidgets_js in _config.yml).
// embed-amd.js finds its Font Awesome fonts relative to the RequireJS uri of its modules
// "@jupyter-widgets/html-manager" and ".../dist/libembed-amd" (and
// window.__jupyter_widgets_assets_path__). By default those resolve against the page's folder,
// so every widget icon was a 404. Point them all at the vendored fonts in
// _static/vendor/html-manager/.
(function () {
  var assets = new URL("vendor/html-manager/", document.currentScript.src).href;
  window.__jupyter_widgets_assets_path__ = assets;
  if (window.require && window.require.config) {
    // only the module uris matter (their folder is the fonts' folder): the modules themselves
    // are all defined inside embed-amd.js, so nothing is fetched from these paths
    window.require.config({ paths: {
      "@jupyter-widgets/html-manager": assets + "html-manager",
      "@jupyter-widgets/html-manager/dist/libembed-amd": assets + "libembed-amd",
    } });
  }
})();
