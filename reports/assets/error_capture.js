(function () {
  'use strict';
  var errors = [];
  window.lockstepErrors = errors;
  document.documentElement.setAttribute('data-errors', '0');
  function record(text) {
    errors.push(String(text));
    document.documentElement.setAttribute('data-errors', String(errors.length));
    var list = document.getElementById('lockstep-errors');
    if (list) { list.textContent = errors.join('\n'); }
  }
  window.addEventListener('error', function (e) {
    record('error: ' + e.message + ' (' + e.filename + ':' + e.lineno + ')');
  });
  window.addEventListener('unhandledrejection', function (e) { record('unhandled rejection: ' + e.reason); });
  ['error', 'warn'].forEach(function (level) {
    var original = console[level];
    console[level] = function () {
      record('console.' + level + ': ' + Array.prototype.join.call(arguments, ' '));
      return original.apply(console, arguments);
    };
  });
})();
